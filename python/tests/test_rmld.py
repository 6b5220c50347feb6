"""The Python package: arrays in and out, the library's defaults and errors, ArviZ,
imbalanced-learn, progress, the GIL and Ctrl-C."""

import gzip
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import rmld

ROOT = Path(__file__).resolve().parents[2]


def rmld_binary():
    path = Path(os.environ.get("RMLD_BIN", ROOT / "target" / "debug" / "rmld"))
    if not path.exists():
        pytest.fail(f"the rmld binary is not at {path} (build it, or set RMLD_BIN)")
    return path


def test_load_digits_is_the_embedded_dataset():
    images, labels = rmld.load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.float32
    assert labels.shape == (1797,) and set(np.unique(labels)) == set(range(10))
    assert 0.0 <= images.min() and images.max() == 1.0


def test_sample_equals_the_command_line_with_the_same_settings(tmp_path):
    """No data, the same settings: the package and `rmld sample` give the same draws (the
    package's codes are the command line's codes.npy with chain and draw swapped)."""
    settings = dict(chains=5, samples=4, seed=11, method="mala", eta=0.002, backend="cpu")
    result = rmld.sample(**settings)
    out = tmp_path / "cli"
    subprocess.run(
        [rmld_binary(), "sample", "--chains", "5", "--samples", "4", "--seed", "11",
         "--method", "mala", "--eta", "0.002", "--backend", "cpu", "--out", out],
        check=True, capture_output=True,
    )
    codes = np.load(out / "codes.npy")
    kept = 4 - result.report["burn_in"]  # MALA's default warm-up: at most half the samples
    assert result.codes.shape == (5, kept, codes.shape[2])
    np.testing.assert_array_equal(result.codes, codes.transpose(1, 0, 2))
    images = np.load(out / "images.npy")
    np.testing.assert_array_equal(result.images.reshape(5, kept, -1), images.transpose(1, 0, 2))
    assert result.report["settings"]["dynamics"]["method"] == "mala"


def test_the_package_is_the_command_lines_build():
    """Built from one tree, the package and the binary are one build, so the shards and
    warm-ups one writes, the other merges and continues."""
    version = subprocess.run(
        [rmld_binary(), "--version"], check=True, capture_output=True, text=True
    ).stdout
    assert version.strip() == f"rmld {rmld.__version__} (build {rmld.__build__})"
    assert len(rmld.__build__) == 16 and int(rmld.__build__, 16) >= 0


def test_arrays_in_any_layout_sample_alike():
    images, _ = rmld.load_digits()
    square = rmld.sample(images[:200], chains=3, samples=3, seed=2, backend="cpu")
    rows = rmld.sample(images[:200].reshape(200, 64), chains=3, samples=3, seed=2, backend="cpu")
    np.testing.assert_array_equal(square.codes, rows.codes)
    assert square.images.shape == (3, 3, 8, 8)


def test_out_keeps_the_run_folder(tmp_path):
    rmld.sample(chains=2, samples=2, backend="cpu", out=tmp_path / "run")
    assert (tmp_path / "run" / "codes.npy").exists()
    assert (tmp_path / "run" / "report.json").exists()


def test_draws_that_cannot_fit_on_the_disk_are_refused_before_the_run(tmp_path):
    # 2**32 - 1 outer iterations of 64 chains: hundreds of TiB, past any disk.
    with pytest.raises(ValueError, match=r"invalid setting samples: .* on disk .*codes\.npy"):
        rmld.sample(samples=2**32 - 1, backend="cpu", out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_errors_are_python_exceptions_with_the_library_message(tmp_path):
    images, _ = rmld.load_digits()
    with pytest.raises(ValueError, match="unknown setting `chainz`"):
        rmld.sample(images[:50], chainz=3)
    with pytest.raises(ValueError, match="chains"):
        rmld.sample(images[:50], chains=0, backend="cpu")
    with pytest.raises(ValueError, match="shape"):
        rmld.sample(np.zeros((4, 2, 2, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="0..255"):
        rmld.sample(np.full((4, 4), 300))
    with pytest.raises(ValueError, match="unknown preset"):
        rmld.augment(images[:50], np.zeros(50, dtype=int), preset="fast")
    with pytest.raises(ValueError, match="labels"):
        rmld.augment(images[:50], -np.ones(50, dtype=int), backend="cpu")
    with pytest.raises(OSError, match="missing.npy"):
        rmld.sample(data=str(tmp_path / "missing.npy"), backend="cpu")


def test_inference_data_has_arviz_groups_and_dims():
    import arviz as az
    # burn_in=0: no warm-up, so every draw is kept and the leapfrog count is the fixed one.
    result = rmld.sample(chains=4, samples=120, method="hmc", burn_in=0, seed=5, backend="cpu")
    idata = result.to_inference_data()
    codes = idata.posterior["codes"]
    assert codes.dims == ("chain", "draw", "coefficient")
    assert codes.shape == result.codes.shape
    stats = idata.sample_stats
    for name in ("acceptance_rate", "energy", "lp", "step_size", "diverging", "n_steps"):
        assert stats[name].shape == (4, 120), name
    # They are the files the run wrote beside its draws (sample_stats/*.npy), which agree with
    # the MH trace the binding hands over.
    assert result.sample_stats is not None
    with np.errstate(over="ignore"):
        traced = np.minimum(1.0, np.exp(result.log_alpha))
    np.testing.assert_allclose(stats["acceptance_rate"].values, traced, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(stats["energy"].values, result.energy)
    assert (stats["n_steps"].values == result.report["settings"]["dynamics"]["leapfrog_steps"]).all()
    # The realised acceptance is a Bernoulli draw per proposal with probability min(1, alpha):
    # over 480 proposals it lies within 4 standard errors (4 * 0.5 / sqrt(480) < 0.1).
    accepted = result.report["acceptance"]["overall"]
    assert abs(float(stats["acceptance_rate"].mean()) - accepted) < 0.1
    # arviz.summary's R-hat and bulk/tail ESS of the energy are those rmld reports, to 1e-6.
    reported = {q["name"]: q for q in result.report["diagnostics"]["quantities"]}["energy"]
    theirs = az.summary(idata, group="sample_stats", var_names=["energy"], round_to="none")
    for column, ours in (("r_hat", reported["rhat"]), ("ess_bulk", reported["ess_bulk"]),
                         ("ess_tail", reported["ess_tail"])):
        value = float(theirs.loc["energy", column])
        assert abs(value - ours) < 1e-6 * ours, (column, value, ours)
    summary = az.summary(idata, var_names=["codes"])
    assert {"r_hat", "ess_bulk", "ess_tail", "mcse_mean"} <= set(summary.columns)
    assert len(summary) == result.codes.shape[2]


def test_an_automatic_burn_in_keeps_the_draws_after_it():
    result = rmld.sample(chains=8, samples=80, method="mala", burn_in="auto", seed=2, backend="cpu")
    auto = result.report["burn_in_auto"]
    end = auto["ended_at"]
    assert auto["cap"] == 40 and 20 <= end <= 40, auto
    assert result.report["burn_in"] == end
    assert result.codes.shape[:2] == (8, 80 - end)
    stats = result.to_inference_data().sample_stats
    assert stats["energy"].shape == (8, 80 - end)
    with pytest.raises(ValueError, match="burn_in"):
        rmld.sample(chains=2, samples=4, burn_in="auto:x", backend="cpu")


def test_f16_precision_reaches_the_run():
    result = rmld.sample(chains=4, samples=3, precision="f16", seed=1, backend="cpu")
    assert result.report["dictionary"]["precision"] == "f16"
    plain = rmld.sample(chains=4, samples=3, seed=1, backend="cpu")
    assert "precision" not in plain.report["dictionary"]
    gap = np.abs(result.codes - plain.codes).max()
    assert 0 < gap < 0.02 * np.abs(plain.codes).max()


def test_augment_returns_the_generated_and_the_augmented_set():
    images, labels = rmld.load_digits()
    result = rmld.augment(images[:300], labels[:300], ratio=10, method="compression",
                          no_quality=True, backend="cpu", seed=1)
    generated = len(result.images)
    assert generated > 0 and result.images.shape[1:] == (8, 8)
    assert result.labels.shape == (generated,) and set(result.labels) <= set(range(10))
    assert result.codes.shape[0] == generated
    assert len(result.augmented_images) == 300 + generated
    assert result.report["generated_count"] == generated


def test_augment_refuses_classes_with_balance_as_the_command_line_does():
    # balance chooses the classes itself; `classes` beside it was ignored without a word.
    images, labels = rmld.load_digits()
    with pytest.raises(ValueError, match="classes: cannot be used with balance"):
        rmld.augment(images[:100], labels[:100], classes=[3, 5], balance="auto", backend="cpu")


def test_augment_takes_the_ratio_as_the_command_line_types_it():
    images, labels = rmld.load_digits()
    as_text = rmld.augment(images[:100], labels[:100], ratio="1:2", no_quality=True,
                           backend="cpu", seed=1)
    as_number = rmld.augment(images[:100], labels[:100], ratio=0.5, no_quality=True,
                             backend="cpu", seed=1)
    assert len(as_text.images) == 200
    np.testing.assert_array_equal(as_text.images, as_number.images)
    with pytest.raises(ValueError, match="original:generated"):
        rmld.augment(images[:100], labels[:100], ratio="2:0", backend="cpu")


def test_mala_warms_up_by_default_as_on_the_command_line():
    # No burn_in given: MALA and HMC end an automatic warm-up (at most half the samples), RMLD
    # keeps every iteration.
    mala = rmld.sample(method="mala", chains=4, samples=30, backend="cpu", seed=2)
    assert mala.report["burn_in_auto"]["cap"] == 15
    assert 1 <= mala.report["burn_in"] <= 15
    assert mala.codes.shape[1] == 30 - mala.report["burn_in"]
    plain = rmld.sample(chains=4, samples=6, backend="cpu", seed=2)
    assert plain.report["burn_in"] == 0 and plain.report.get("burn_in_auto") is None
    fixed = rmld.sample(method="mala", chains=4, samples=30, burn_in=3, backend="cpu", seed=2)
    assert fixed.report["burn_in"] == 3 and fixed.report.get("burn_in_auto") is None


def test_augment_adapts_each_class_when_asked():
    # adapt=True: each class's chains adapt their own step size over the burn-in (MALA or HMC).
    images, labels = rmld.load_digits()
    result = rmld.augment(images[:300], labels[:300], method="mala", burn_in=10, adapt=True,
                          ratio=10, samples=2, no_quality=True, backend="cpu", seed=1)
    adaptation = result.report["adaptation"]
    assert adaptation["frozen"] and adaptation["adapted_iterations"] == 10
    classes = adaptation["classes"]
    assert [c["class"] for c in classes] == sorted(set(labels[:300].tolist()))
    assert all(c["step_size"] > 0 for c in classes)
    with pytest.raises(ValueError, match="adapt"):
        rmld.augment(images[:300], labels[:300], method="mala", adapt=True, ratio=10,
                     no_quality=True, backend="cpu")
    # burn_in="auto": the warm-up ends where the steps and the chains settle (at most 200).
    auto = rmld.augment(images[:300], labels[:300], method="mala", burn_in="auto", adapt=True,
                        pixel_max=1, lam=0.05, sigma2=0.01, eta=0.001, ratio=10, samples=2,
                        no_quality=True, backend="cpu", seed=1).report
    assert auto["burn_in_auto"]["cap"] == 200
    assert auto["burn_in"] == auto["burn_in_auto"]["ended_at"] <= 200
    assert auto["adaptation"]["adapted_iterations"] == auto["burn_in"]


def test_augment_uses_given_scales_as_given():
    # As on the command line: the quality preset's chains (HMC; the default method, deform, runs
    # none) fit η, σ², the smoothing and the tangent scale to the data, except the ones the
    # caller gives.
    images, labels = rmld.load_digits()
    common = dict(ratio=10, samples=2, burn_in=2, no_quality=True, backend="cpu", seed=1,
                  preset="quality", method="hmc")
    fitted = rmld.augment(images[:300], labels[:300], **common).report
    scaled = fitted["scale_fitted_to_data"]
    assert scaled["eta"]["used"] != 0.003 and scaled["class_margin"] > 0
    # sigma2 and tangent_scale are also names of fit_scale_to_data's switches: a flat name
    # reaches the setting, not the switch.
    given = rmld.augment(images[:300], labels[:300], eta=0.003, sigma2=0.02, tangent_scale=2.5,
                         **common).report
    scaled = given["scale_fitted_to_data"]
    assert scaled["eta"] is None and scaled["sigma2"] is None and scaled["tangent_scale"] is None
    assert scaled["smooth"]["used"] == fitted["scale_fitted_to_data"]["smooth"]["used"]
    assert given["settings"]["dynamics"]["eta"] == pytest.approx(0.003)
    assert given["sigma2"] == pytest.approx(0.02)
    assert given["tangent"]["scale"] == 2.5


def test_imblearn_pipeline_uses_the_augmenter():
    import imblearn.pipeline as pipeline
    from sklearn.linear_model import LogisticRegression

    from rmld.sklearn import RMLDAugmenter

    images, labels = rmld.load_digits()
    X, y = images[:300].reshape(300, 64), labels[:300]
    augmenter = RMLDAugmenter(ratio=10, backend="cpu",
                              settings=dict(method="compression", no_quality=True))
    X_res, y_res = augmenter.fit_resample(X, y)
    assert X_res.shape[1] == 64 and X_res.dtype == X.dtype and len(X_res) > 300
    np.testing.assert_array_equal(X_res[:300], X)
    assert 0.0 <= X_res.min() and X_res.max() <= 1.0
    model = pipeline.Pipeline([("augment", augmenter), ("classify", LogisticRegression(max_iter=200))])
    model.fit(X, y)
    assert model.score(X, y) > 0.8


def test_progress_reaches_the_callback():
    calls = []
    rmld.sample(chains=2, samples=5, backend="cpu", progress=lambda *a: calls.append(a))
    phases = {name for name, _, _ in calls}
    assert "sampling" in phases, phases
    done = [d for name, d, total in calls if name == "sampling"]
    assert max(done) == 5


def test_runs_release_the_gil():
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    started = time.time()
    rmld.sample(chains=64, samples=40, backend="cpu")
    elapsed = time.time() - started
    stop.set()
    counter.join()
    # With the GIL held for the whole run the counter would not tick at all meanwhile.
    assert len(ticks) > 0.2 * elapsed / 0.001 * 0.1, (len(ticks), elapsed)


@pytest.fixture
def python_handles_ctrl_c():
    """Python's Ctrl-C handler for the test's duration. A process started from a shell's
    background job (as `cmd &` without job control does) inherits SIGINT ignored, and Python
    then installs no handler, so Ctrl-C never reaches it (it hung a clean-clone rehearsal run
    in the background in session 5); a terminal's Ctrl-C has Python's handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_raises_keyboard_interrupt_with_the_partial_result(python_handles_ctrl_c,
                                                                  monkeypatch):
    # Stopped after a second: the million iterations' draws need not fit on the disk.
    monkeypatch.setenv("RMLD_SKIP_DISK_CHECK", "1")
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as caught:
        rmld.sample(chains=64, samples=1_000_000, backend="cpu")
    timer.cancel()
    partial = caught.value.result
    assert partial.interrupted
    assert 0 < partial.codes.shape[1] < 1_000_000


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.float32, np.float64, np.bool_])
@pytest.mark.parametrize("layout", ["rows", "images", "strided"])
def test_every_dtype_and_layout_round_trips(dtype, layout):
    images, _ = rmld.load_digits()
    if dtype in (np.uint8, np.int64):
        data = np.round(images[:120] * 255).astype(dtype)
    elif dtype == np.bool_:
        data = images[:120] > 0.5
    else:
        data = images[:120].astype(dtype)
    if layout == "rows":
        data = data.reshape(120, 64)
    elif layout == "strided":
        # Every other image of a bigger array: not contiguous.
        data = np.repeat(data, 2, axis=0)[::2]
        assert not data.flags["C_CONTIGUOUS"]
    result = rmld.sample(data, chains=2, samples=2, seed=4, backend="cpu")
    assert result.codes.shape == (2, 2, 256) and result.codes.dtype == np.float32
    assert result.images.shape == (2, 2, 8, 8)
    assert np.all(np.isfinite(result.codes))
    if layout == "strided":
        same = rmld.sample(np.ascontiguousarray(data), chains=2, samples=2, seed=4, backend="cpu")
        np.testing.assert_array_equal(result.codes, same.codes)


@pytest.mark.parametrize("dtype", [np.float16, np.longdouble, ">f4", ">f8", ">i2"])
def test_other_float_widths_and_byte_orders_are_read_as_their_values(dtype):
    # The native module reads float32/float64 and integers in this machine's byte order; the
    # others are converted first rather than refused as "not numbers".
    images, _ = rmld.load_digits()
    values = np.round(images[:120] * 16) if np.dtype(dtype).kind == "i" else images[:120]
    usual = values.astype(np.int64 if np.dtype(dtype).kind == "i" else np.float32)
    result = rmld.sample(values.astype(dtype), chains=2, samples=2, seed=4, backend="cpu")
    same = rmld.sample(usual, chains=2, samples=2, seed=4, backend="cpu")
    np.testing.assert_array_equal(result.codes, same.codes)


def test_balance_takes_imbalanced_learns_forms():
    images, labels = rmld.load_digits()
    images, labels = images[:200], labels[:200]
    have = np.bincount(labels)
    for balance in ({5: 30}, {np.int64(5): np.int64(30)}, "5:30"):
        result = rmld.augment(images, labels, balance=balance, backend="cpu", no_quality=True)
        assert result.labels.tolist() == [5] * (30 - have[5]), balance
    auto = rmld.augment(images, labels, balance="auto", backend="cpu", no_quality=True)
    after = have + np.bincount(auto.labels, minlength=len(have))
    assert set(after.tolist()) == {have.max()}
    # The augmented set is the resampled one: every original (the majority's too), then the new.
    assert auto.augmented_labels[:200].tolist() == labels.tolist()
    assert np.bincount(auto.augmented_labels).tolist() == after.tolist()
    with pytest.raises(ValueError, match="balance.*class 11 is not among"):
        rmld.augment(images, labels, balance={11: 30}, backend="cpu")


def test_real_values_are_taken_as_they_are_with_data_scale_raw(tmp_path):
    # Positive responses above 1 are taken as pixels by default (divided by the largest, with
    # a notice); data_scale="raw" regresses them as they are.
    rng = np.random.default_rng(0)
    design = np.abs(rng.normal(size=(50, 20))).astype(np.float32)
    beta = np.zeros(20, dtype=np.float32)
    beta[:3] = [20, 10, 5]
    y = (design @ beta + 0.1 * rng.normal(size=50)).astype(np.float32)[None, :]
    np.save(tmp_path / "X.npy", design)
    run = dict(dictionary=tmp_path / "X.npy", lam=0.1, method="mala", eta=0.0002, chains=4,
               samples=1000, burn_in=500, backend="cpu")
    raw = rmld.sample(y, data_scale="raw", **run)
    np.testing.assert_allclose(raw.codes[:, -500:].mean((0, 1))[:3], beta[:3], atol=1.0)
    assert not any("float data up to" in str(n) for n in raw.notices)
    pixels = rmld.sample(y, pixel_max=1, **run)
    assert any("float data up to" in str(n) and "data-scale raw" in str(n) for n in pixels.notices)
    assert pixels.codes[:, -500:].mean((0, 1))[0] < 1  # 20 over the largest response


@pytest.mark.parametrize("channel", [-1, 1])
def test_images_with_one_channel_are_images(channel):
    # Keras's (N, h, w, 1) and PyTorch's (N, 1, h, w) grey images: the same run as (N, h, w).
    images, labels = rmld.load_digits()
    plain = rmld.augment(images[:100], labels[:100], seed=1, no_quality=True, backend="cpu")
    channelled = rmld.augment(np.expand_dims(images[:100], channel), labels[:100], seed=1,
                              no_quality=True, backend="cpu")
    np.testing.assert_array_equal(channelled.images, plain.images)
    with pytest.raises(ValueError, match="one channel"):
        rmld.augment(np.repeat(images[:100, ..., None], 3, axis=-1), labels[:100], backend="cpu")


def test_bad_inputs_raise_clear_errors():
    images, labels = rmld.load_digits()
    with pytest.raises(ValueError, match="non-finite"):
        bad = images[:50].copy()
        bad[3, 2, 1] = np.nan
        rmld.sample(bad, backend="cpu")
    with pytest.raises(ValueError, match="dtype"):
        rmld.sample(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="no data"):
        rmld.sample(np.zeros((0, 8, 8), dtype=np.uint8), backend="cpu")
    with pytest.raises(ValueError, match="one per image"):
        rmld.augment(images[:50], labels[:49], backend="cpu")
    with pytest.raises(ValueError, match="integers"):
        rmld.augment(images[:50], labels[:50] + 0.5, backend="cpu")
    with pytest.raises(ValueError, match="integers.*dtype <U1"):
        rmld.augment(images[:50], np.array(["a", "b"] * 25), backend="cpu")
    # A value of the wrong type names its setting (serde's message alone did not).
    with pytest.raises(ValueError, match=r"invalid setting seed = -1: .*expected u64"):
        rmld.augment(images[:50], labels[:50], backend="cpu", seed=-1)
    with pytest.raises(ValueError, match=r"invalid setting chains = 2.5"):
        rmld.sample(chains=2.5, samples=2, backend="cpu")
    with pytest.raises(ValueError, match=r"labels\[0\] is 9223372036854775808"):
        rmld.augment(images[:50], labels[:50].astype(np.uint64) + np.uint64(2**63), backend="cpu")
    # NaN and infinities, which JSON cannot carry, name their setting too.
    with pytest.raises(ValueError, match=r"invalid setting eta: must be a finite number, got nan"):
        rmld.sample(images[:50], eta=float("nan"), backend="cpu")
    with pytest.raises(ValueError, match=r"invalid setting balance\[1\]: .* got inf"):
        rmld.augment(images[:50], labels[:50], balance={1: float("inf")}, backend="cpu")


def test_a_class_with_one_image_is_augmented_or_refused_clearly():
    images, labels = rmld.load_digits()
    keep = np.concatenate([np.flatnonzero(labels == 0)[:40], np.flatnonzero(labels == 1)[:1]])
    try:
        result = rmld.augment(images[keep], labels[keep], ratio=2, method="compression",
                              no_quality=True, backend="cpu")
    except ValueError as error:
        assert "class" in str(error) or "batch" in str(error), error
    else:
        assert set(result.labels) <= {0, 1}


def test_ctrl_c_stops_within_one_iteration(python_handles_ctrl_c, monkeypatch):
    monkeypatch.setenv("RMLD_SKIP_DISK_CHECK", "1")
    started = []
    timer = threading.Timer(1.0, lambda: (started.append(time.time()),
                                          os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as caught:
        rmld.sample(chains=16, samples=1_000_000, backend="cpu", progress=lambda *a: None)
    stopped = time.time()
    partial = caught.value.result
    draws = partial.codes.shape[1]
    # One iteration lasts (time to the signal) / (iterations by then); the stop comes within
    # a few of them (the signal is seen at the next iteration's poll).
    per_iteration = 1.0 / max(draws, 1)
    assert stopped - started[0] < 0.5 + 3 * per_iteration, (stopped - started[0], draws)


def test_inference_data_saves_to_netcdf(tmp_path):
    import arviz as az

    idata = rmld.sample(chains=2, samples=10, backend="cpu").to_inference_data(images=True)
    path = tmp_path / "draws.nc"
    idata.to_netcdf(str(path))
    loaded = az.from_netcdf(str(path))
    np.testing.assert_array_equal(loaded.posterior["codes"].values, idata.posterior["codes"].values)
    assert loaded.posterior["images"].dims == ("chain", "draw", "row", "column")


def test_augmenter_in_cross_val_score():
    from imblearn.pipeline import Pipeline
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    from rmld.sklearn import RMLDAugmenter

    images, labels = rmld.load_digits()
    X, y = images[:400].reshape(400, 64), labels[:400]
    model = Pipeline([
        ("augment", RMLDAugmenter(ratio=8, backend="cpu",
                                  settings=dict(method="compression", no_quality=True))),
        ("classify", LogisticRegression(max_iter=300)),
    ])
    scores = cross_val_score(model, X, y, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.7, scores


def test_augment_dataset_writes_an_image_folder(tmp_path):
    from PIL import Image

    images, labels = rmld.load_digits()
    result = rmld.augment_dataset(images[:300], labels[:300], tmp_path / "set", ratio=10,
                                  method="compression", no_quality=True, backend="cpu")
    folder = tmp_path / "set" / "imagefolder"
    assert (tmp_path / "set" / "train-images-idx3-ubyte.gz").exists()
    classes = sorted(int(p.name) for p in folder.iterdir())
    assert classes == sorted(set(int(l) for l in result.augmented_labels))
    total = 0
    for label in classes:
        files = sorted((folder / str(label)).glob("*.png"))
        expected = int((result.augmented_labels == label).sum())
        assert len(files) == expected, label
        for file in files[:3]:
            with Image.open(file) as image:
                assert image.size == (8, 8) and image.mode == "L"
        total += len(files)
    assert total == len(result.augmented_images)
    # A second run into the folder is refused before any work; force=True replaces the image
    # folder whole (no image of the first run stays among the second's).
    (folder / "0" / "mine.png").write_bytes(b"not rmld's")
    with pytest.raises(FileExistsError, match="imagefolder exists already"):
        rmld.augment_dataset(images[:300], labels[:300], tmp_path / "set", ratio=10,
                             method="compression", no_quality=True, backend="cpu")
    assert (folder / "0" / "mine.png").read_bytes() == b"not rmld's"
    smaller = rmld.augment_dataset(images[:100], labels[:100], tmp_path / "set", ratio=10,
                                   method="compression", no_quality=True, backend="cpu",
                                   force=True)
    assert sum(1 for _ in folder.rglob("*.png")) == len(smaller.augmented_images)
    assert not (folder / "0" / "mine.png").exists()
    assert [p.name for p in (tmp_path / "set").iterdir() if p.name.startswith(".imagefolder")] == []


def test_encode_stops_each_row_as_the_command_line_does(tmp_path):
    """`rmld.encode` takes the command line's LASSO stop: by default ADMM to a relative duality
    gap of 5e-3 (the codes of `rmld encode`, byte for byte), and with lasso_tolerance=0 every
    FISTA iteration (other codes)."""
    out = tmp_path / "cli"
    subprocess.run([rmld_binary(), "encode", "--limit", "40", "--seed", "5", "--backend", "cpu",
                    "--out", out], check=True, capture_output=True)
    default = rmld.encode(limit=40, seed=5, backend="cpu")
    np.testing.assert_array_equal(default.codes, np.load(out / "codes.npy"))
    assert default.report["lasso"]["encoder"] == "admm"
    assert default.report["lasso"]["tolerance"] == pytest.approx(5e-3)
    every = rmld.encode(limit=40, seed=5, backend="cpu", lasso_tolerance=0)
    assert every.report["lasso"]["encoder"] == "fista"
    assert every.report["lasso"]["mean_iterations"] == 200
    assert not np.array_equal(every.codes, default.codes)


@pytest.mark.parametrize("flags, settings", [
    (["--limit", "300", "--samples", "3", "--burn-in", "2"], dict(limit=300, samples=3, burn_in=2)),
    (["--method", "rmld", "--limit", "150"], dict(method="rmld", limit=150)),
])
def test_augment_equals_the_command_line_byte_for_byte(tmp_path, flags, settings):
    """Same settings, same seed: the package's generated images, labels and codes are the
    command line's files (and the preset follows the same rule: quality unless a method is
    given)."""
    out = tmp_path / "cli"
    subprocess.run([rmld_binary(), "augment", *flags, "--seed", "3", "--no-quality",
                    "--backend", "cpu", "--out", out], check=True, capture_output=True)
    result = rmld.augment(seed=3, no_quality=True, backend="cpu", **settings)
    np.testing.assert_array_equal(result.images, rmld.read_idx(out / "generated-images-idx3-ubyte.gz"))
    np.testing.assert_array_equal(result.labels, np.load(out / "generated-labels.npy"))
    np.testing.assert_array_equal(result.codes, np.load(out / "generated-codes.npy"))
    assert result.report["preset"] == ("paper" if "method" in settings else "quality")


def test_amortize_train_writes_a_model_augment_generates_with(tmp_path):
    # The learned sampler from Python, as `rmld amortize train` then `augment --sampler
    # amortized`: a small training on two classes of the embedded digits.
    images, labels = rmld.load_digits()
    keep = np.isin(labels, [0, 1])
    images, labels = images[keep][:120], labels[keep][:120]
    common = dict(preset="paper", lasso_iterations=20, samples=2, backend="cpu", seed=3)
    model = tmp_path / "digits.amz"
    trained = rmld.amortize_train(images, labels, model=model, ratio=1, fit_steps=10, hidden=4,
                                  **common)
    assert trained.model == model and model.exists() and not trained.interrupted
    assert trained.report["command"] == "amortize train"
    assert trained.report["settings"]["hidden"] == 4
    assert trained.report["settings"]["fit_steps"] == 10
    assert trained.report["fit_device"] == "CPU"
    result = rmld.augment(images, labels, sampler="amortized", model=str(model), **common)
    assert result.report["sampler"] == "amortized"
    assert len(result.images) == result.report["generated_count"] > 0
    # A training setting out of range is refused by name, before any work.
    with pytest.raises(ValueError, match="fit.steps"):
        rmld.amortize_train(images, labels, model=tmp_path / "bad.amz", fit_steps=0, **common)


def test_read_idx_refuses_damaged_files_by_name(tmp_path):
    cases = {
        "empty.gz": b"",
        "short": b"\x00\x00\x08\x03\x00\x00\x00\x05",
        "foreign": b"PK\x03\x04 not idx",
        "cut": b"\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02",
    }
    for name, raw in cases.items():
        path = tmp_path / name
        path.write_bytes(raw)
        with pytest.raises(ValueError, match=name):
            rmld.read_idx(path)
    gz = tmp_path / "cut.gz"
    gz.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x05" + bytes(5))[:20])
    with pytest.raises(ValueError, match="cut.gz"):
        rmld.read_idx(gz)
    good = tmp_path / "good"
    good.write_bytes(b"\x00\x00\x08\x02\x00\x00\x00\x02\x00\x00\x00\x03" + bytes(range(6)))
    np.testing.assert_array_equal(rmld.read_idx(good), np.arange(6, dtype=np.uint8).reshape(2, 3))
