"""RMLDAugmenter the imbalanced-learn way: sampling_strategy, random_state, Pipeline and
GridSearchCV, and the errors that name the class."""

from collections import Counter

import numpy as np
import pytest

import rmld
from rmld import sklearn as rmld_sklearn
from rmld.sklearn import RMLDAugmenter, resolve_sampling_strategy

imblearn = pytest.importorskip("imblearn")
FAST = dict(backend="cpu")


def imbalanced_digits(majority=40, minority=8):
    """The embedded digits cut to classes 0-4 of `majority` and 5-9 of `minority` images."""
    images, labels = rmld.load_digits()
    keep = np.concatenate([np.flatnonzero(labels == c)[: majority if c < 5 else minority]
                           for c in range(10)])
    return images[keep], labels[keep]


def test_strategies_resolve_as_imbalanced_learn_does():
    from imblearn.utils import check_sampling_strategy

    _, y = imbalanced_digits()
    y = y.copy()
    y[y == 9] = 8  # classes of 40, 40, 40, 40, 40, 8, 8, 8, 16: one minority-most tie broken
    y = y[:-3]  # ... and class 8 at 13: a single minority class
    binary = np.array([0] * 30 + [1] * 7)
    strategies = [("auto", y), ("minority", y), ("not minority", y), ("not majority", y),
                  ("all", y), ({5: 40, 6: 45}, y), (lambda labels: {7: 50}, y), (0.5, binary),
                  (1.0, binary)]
    for strategy, labels in strategies:
        ours = {c: n for c, n in resolve_sampling_strategy(strategy, labels).items() if n > 0}
        resolved = check_sampling_strategy(strategy, labels, "over-sampling")
        theirs = {c: n for c, n in resolved.items() if n > 0}
        assert ours == theirs, (strategy, ours, theirs)


def test_auto_balances_the_classes_with_new_images_after_the_originals():
    X, y = imbalanced_digits()
    augmenter = RMLDAugmenter(sampling_strategy="auto", random_state=0, **FAST)
    X_res, y_res = augmenter.fit_resample(X, y)
    assert set(Counter(y_res.tolist()).values()) == {40}
    np.testing.assert_array_equal(X_res[: len(X)], X)
    assert X_res.shape[1:] == X.shape[1:] and X_res.dtype == X.dtype
    assert 0.0 <= X_res.min() and X_res.max() <= 1.0
    assert dict(augmenter.sampling_strategy_) == {c: (32 if c >= 5 else 0) for c in range(1, 10)}
    # New images are not copies of the originals.
    new = X_res[len(X):].reshape(len(X_res) - len(X), -1)
    old = X.reshape(len(X), -1)
    nearest = np.min(((new[:, None, :] - old[None, :, :]) ** 2).sum(-1), axis=1)
    assert np.median(nearest) > 0.01


def test_dict_float_callable_and_rows():
    X, y = imbalanced_digits()
    rows = X.reshape(len(X), -1)
    X_res, y_res = RMLDAugmenter(sampling_strategy={5: 20, 6: 9}, random_state=1,
                                 **FAST).fit_resample(rows, y)
    assert X_res.shape == (len(X) + 13, 64)
    assert Counter(y_res[len(X):].tolist()) == {5: 12, 6: 1}
    _, y_res = RMLDAugmenter(sampling_strategy=lambda labels: {9: 30}, random_state=1,
                             **FAST).fit_resample(X, y)
    assert Counter(y_res[len(X):].tolist()) == {9: 22}
    binary = (y >= 5).astype(int)
    _, y_res = RMLDAugmenter(sampling_strategy=0.5, random_state=1, **FAST).fit_resample(X, binary)
    assert Counter(y_res.tolist()) == {0: 200, 1: 100}


def test_balanced_classes_come_back_unchanged_as_imbalanced_learn_gives_them():
    """A cut whose classes are already even (a cross-validation fold can be) asks for no new
    image: the originals come back, in every layout, as SMOTE returns them, with a warning that
    names `ratio` (which adds images to balanced classes)."""
    from imblearn.over_sampling import SMOTE

    X, y = imbalanced_digits(majority=8, minority=8)
    for given in (X, X.reshape(len(X), -1)):
        for strategy in ("auto", "all", {5: 8}):
            with pytest.warns(UserWarning, match=r"generated no image.*ratio=0\.25"):
                X_res, y_res = RMLDAugmenter(sampling_strategy=strategy, random_state=0,
                                             **FAST).fit_resample(given, y)
            X_smote, y_smote = SMOTE(sampling_strategy=strategy, k_neighbors=3).fit_resample(
                given.reshape(len(given), -1), y)
            assert X_res.shape == given.shape and X_res.dtype == given.dtype, strategy
            np.testing.assert_array_equal(X_res.reshape(len(X), -1), X_smote)
            np.testing.assert_array_equal(y_res, y_smote)


def test_ratio_keeps_its_meaning():
    X, y = imbalanced_digits()
    _, y_res = RMLDAugmenter(ratio=4, random_state=0, **FAST).fit_resample(X, y)
    assert Counter(y_res[len(X):].tolist()) == {c: (10 if c < 5 else 2) for c in range(10)}


def test_a_ratio_that_asks_for_no_image_or_is_no_number_is_refused_by_name():
    """An infinite ratio asked for round(n / inf) = 0 images of every class and returned the
    originals without a word (not even the warning a strategy asking for none gives); NaN, 0
    and negative ratios, and text that is no "O:G", are refused the same way, naming ratio and
    what it takes, before anything runs. The command line's text "4:1" is read as rmld.augment
    reads it."""
    X, y = imbalanced_digits()
    for bad in (float("inf"), float("-inf"), float("nan"), np.float64("inf"), 0, 0.0, -4,
                "inf", "nan", "0:1", "1:0", "-1:4", "x", "1e308:1e-10", True, [4]):
        with pytest.raises(ValueError, match=r'ratio must be originals per generated image: a '
                                             r'positive, finite number.*"O:G" like "1:4"'):
            RMLDAugmenter(ratio=bad, random_state=0, **FAST).fit_resample(X, y)
    with pytest.raises(ValueError, match=r"ratio=1e-320 asks for more images"):
        RMLDAugmenter(ratio=1e-320, **FAST).fit_resample(X, y)
    expected = {c: (10 if c < 5 else 2) for c in range(10)}
    for given in ("4:1", " 4 ", "8:2", np.float32(4)):
        _, y_res = RMLDAugmenter(ratio=given, random_state=0, **FAST).fit_resample(X, y)
        assert Counter(y_res[len(X):].tolist()) == expected, given


def test_random_state_gives_the_same_images():
    X, y = imbalanced_digits()
    first = RMLDAugmenter(sampling_strategy={5: 12}, random_state=3, **FAST).fit_resample(X, y)[0]
    again = RMLDAugmenter(sampling_strategy={5: 12}, random_state=3, **FAST).fit_resample(X, y)[0]
    other = RMLDAugmenter(sampling_strategy={5: 12}, random_state=4, **FAST).fit_resample(X, y)[0]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    from_state = RMLDAugmenter(sampling_strategy={5: 12}, random_state=np.random.RandomState(0),
                               **FAST).fit_resample(X, y)[0]
    assert from_state.shape == first.shape
    # None: numpy's global state, as imbalanced-learn's samplers take it: each call draws anew,
    # and numpy.random.seed makes a script repeat itself.
    unseeded = RMLDAugmenter(sampling_strategy={5: 12}, **FAST)
    np.random.seed(7)
    one, two = unseeded.fit_resample(X, y)[0], unseeded.fit_resample(X, y)[0]
    assert not np.array_equal(one, two)
    np.random.seed(7)
    np.testing.assert_array_equal(unseeded.fit_resample(X, y)[0], one)
    # The older `seed` still fixes the draws.
    np.testing.assert_array_equal(
        RMLDAugmenter(sampling_strategy={5: 12}, seed=3, **FAST).fit_resample(X, y)[0], first)


def test_images_normalised_to_minus_one_one_come_back_in_that_range():
    # rmld's images are 0..full scale; float X with negative values is mapped onto that range
    # and back, never cut at 0 (which made every generated background pixel wrong).
    X, y = imbalanced_digits()
    assert X.min() == 0 and X.max() == 1
    plain = RMLDAugmenter(sampling_strategy={5: 12}, random_state=3, **FAST).fit_resample(X, y)[0]
    signed = RMLDAugmenter(sampling_strategy={5: 12}, random_state=3,
                           **FAST).fit_resample(2 * X - 1, y)[0]
    new = signed[len(X):]
    assert new.dtype == X.dtype and -1 <= new.min() and new.max() <= 1
    assert new.min() < -0.9  # the digits' background, near -1 (not cut to 0)
    np.testing.assert_allclose(new, 2 * plain[len(X):] - 1, atol=1e-6)


def test_integer_and_boolean_X_keep_their_range():
    """Integers other than uint8 (pixels 0..16, 12-bit scans, signed) keep their own range, as
    floats do: no new value above the largest given (0..16 was read as dark 8-bit pixels,
    and new images came back brighter than any original); booleans stay 0/1 images."""
    X, y = imbalanced_digits()
    eight_bit = (X * 255).round().astype(np.uint8)
    reference = RMLDAugmenter(random_state=2, **FAST).fit_resample(eight_bit, y)[0][len(X):]
    for top, dtype in ((16, np.int64), (4095, np.uint16), (1000, np.int32), (255, np.int16)):
        given = (X * top).round().astype(dtype)
        new = RMLDAugmenter(random_state=2, **FAST).fit_resample(given, y)[0][len(X):]
        assert new.dtype == dtype and new.min() >= 0 and new.max() <= top, (top, new.max())
        assert abs(new.mean() / top - reference.mean() / 255) < 0.01, top
        if top == 255:  # the same pixels as uint8, bit for bit
            np.testing.assert_array_equal(new, reference)
    signed = (X * 10 - 5).round().astype(np.int8)
    new = RMLDAugmenter(random_state=2, **FAST).fit_resample(signed, y)[0][len(X):]
    assert new.dtype == np.int8 and new.min() >= -5 and new.max() <= 5
    binary = X > 0.5
    new = RMLDAugmenter(random_state=2, **FAST).fit_resample(binary, y)[0][len(X):]
    assert new.dtype == np.bool_ and 0.5 < new.mean() / binary.mean() < 1.5


def test_empty_X_and_a_shape_of_no_size_are_named():
    X, y = imbalanced_digits()
    rows = X.reshape(len(X), -1)
    with pytest.raises(ValueError, match="X holds no rows"):
        RMLDAugmenter(ratio=4, **FAST).fit_resample(rows[:0], y[:0])
    with pytest.raises(ValueError, match="two positive sizes"):
        RMLDAugmenter(ratio=4, image_shape=(-8, -8), **FAST).fit_resample(rows, y)


def test_rows_that_are_not_square_images_need_their_shape():
    """Rows of 60 values are read as one row of pixels, which the default's deformations would
    blank; it says so and names image_shape, with which they run."""
    X, y = imbalanced_digits()
    rows = X.reshape(len(X), -1)[:, :60]
    with pytest.raises(ValueError, match="image_shape"):
        RMLDAugmenter(random_state=0, **FAST).fit_resample(rows, y)
    X_res, y_res = RMLDAugmenter(random_state=0, image_shape=(6, 10), **FAST).fit_resample(rows, y)
    assert X_res.shape == (400, 60) and set(Counter(y_res.tolist()).values()) == {40}


def test_one_channel_X_keeps_its_layout():
    X, y = imbalanced_digits()
    flat = RMLDAugmenter(sampling_strategy={5: 12}, random_state=2, **FAST).fit_resample(X, y)[0]
    for channelled in (X[..., None], X[:, None]):
        X_res, _ = RMLDAugmenter(sampling_strategy={5: 12}, random_state=2,
                                 **FAST).fit_resample(channelled, y)
        assert X_res.shape[1:] == channelled.shape[1:]
        np.testing.assert_array_equal(X_res.reshape(flat.shape), flat)


def test_sparse_X_gets_a_sparse_result_of_its_format():
    from scipy import sparse

    X, y = imbalanced_digits()
    rows = X.reshape(len(X), -1)
    dense = RMLDAugmenter(sampling_strategy={5: 12}, random_state=2, **FAST).fit_resample(rows, y)
    for form in ("csr", "csc"):
        X_res, y_res = RMLDAugmenter(sampling_strategy={5: 12}, random_state=2,
                                     **FAST).fit_resample(sparse.csr_matrix(rows).asformat(form), y)
        assert sparse.issparse(X_res) and X_res.format == form
        np.testing.assert_array_equal(X_res.toarray(), dense[0])
        np.testing.assert_array_equal(y_res, dense[1])


def test_pandas_in_pandas_out_as_imbalanced_learn_gives():
    pd = pytest.importorskip("pandas")
    from imblearn.over_sampling import SMOTE

    X, y = imbalanced_digits()
    frame = pd.DataFrame(X.reshape(len(X), -1), columns=[f"px{i}" for i in range(64)])
    series = pd.Series(y, name="digit")
    ours = RMLDAugmenter(sampling_strategy={5: 12}, random_state=2, **FAST).fit_resample(frame,
                                                                                         series)
    theirs = SMOTE(sampling_strategy={5: 12}, random_state=2).fit_resample(frame, series)
    for mine, smote in zip(ours, theirs):
        assert type(mine) is type(smote) and mine.shape == smote.shape
    assert list(ours[0].columns) == list(frame.columns)
    assert (ours[0].dtypes == frame.dtypes).all()
    assert ours[1].name == "digit" and ours[1].dtype == series.dtype


@pytest.mark.parametrize("strategy, message", [
    ({5: 4}, "class 5 for 4 images, fewer than the 8"),
    ({11: 50}, "class 11, which is not in y"),
    ({5: -1}, "class 5 for -1 images"),
    ({5: 25.0}, "class 5 for 25.0 images: give a whole number"),
    ("most", "'most' is not one of"),
    (0.5, "for two classes only"),
])
def test_bad_strategies_name_the_class_and_run_nothing(monkeypatch, strategy, message):
    monkeypatch.setattr(rmld_sklearn, "augment", _never)
    X, y = imbalanced_digits()
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        RMLDAugmenter(sampling_strategy=strategy).fit_resample(X, y)


def test_a_class_of_one_image_is_named(monkeypatch):
    monkeypatch.setattr(rmld_sklearn, "augment", _never)
    X, y = imbalanced_digits()
    keep = np.ones(len(y), bool)
    keep[np.flatnonzero(y == 7)[1:]] = False
    with pytest.raises(ValueError, match="class 7 has 1 image"):
        RMLDAugmenter().fit_resample(X[keep], y[keep])
    # Not targeted: no error, and class 7 gets nothing.
    monkeypatch.undo()
    _, y_res = RMLDAugmenter(sampling_strategy={5: 9}, **FAST).fit_resample(X[keep], y[keep])
    assert Counter(y_res.tolist())[7] == 1


def _never(*args, **kwargs):
    raise AssertionError("the sampler ran despite bad input")


def test_params_clone_and_grid_search_in_a_pipeline():
    from imblearn.pipeline import Pipeline
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    augmenter = RMLDAugmenter(sampling_strategy="minority", random_state=2, **FAST)
    params = augmenter.get_params()
    assert params["sampling_strategy"] == "minority" and params["random_state"] == 2
    copy = clone(augmenter).set_params(sampling_strategy={5: 20})
    assert copy.sampling_strategy == {5: 20} and augmenter.sampling_strategy == "minority"

    X, y = imbalanced_digits()
    rows = X.reshape(len(X), -1)
    model = Pipeline([("augment", augmenter), ("classify", LogisticRegression(max_iter=300))])
    search = GridSearchCV(model, {"augment__sampling_strategy": ["auto", "not minority"]},
                          cv=StratifiedKFold(2, shuffle=True, random_state=0),
                          scoring="balanced_accuracy")
    search.fit(rows, y)
    assert search.best_params_["augment__sampling_strategy"] in ("auto", "not minority")
    assert search.best_score_ > 0.6
    # The pipeline resamples while fitting only: predicting gives one label per row.
    assert search.predict(rows).shape == (len(rows),)


def test_is_an_imbalanced_learn_sampler():
    from imblearn.over_sampling.base import BaseOverSampler

    assert isinstance(RMLDAugmenter(), BaseOverSampler)
    fitted = RMLDAugmenter(sampling_strategy="not majority").fit(*imbalanced_digits())
    assert dict(fitted.sampling_strategy_)[9] == 32


def test_per_class_runs_give_rmld_augment_s_images():
    """generate_per_class skips the re-encoding (codes only): its images are rmld.augment's with
    the preset's re-encoding, byte for byte, for the classes and ratio it runs."""
    X, y = imbalanced_digits()
    images, labels = rmld_sklearn.generate_per_class(X, y, {5: 16, 6: 16}, seed=2, **FAST)
    direct = rmld.augment(X, y, classes=[5, 6], ratio=0.5, seed=2, no_quality=True,
                          no_original_codes=True, **FAST)
    np.testing.assert_array_equal(images, direct.images)
    np.testing.assert_array_equal(labels, direct.labels)
