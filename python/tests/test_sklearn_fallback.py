"""RMLDAugmenter without imbalanced-learn installed: the same strategies and errors, resolved by
rmld itself (run in a subprocess where `import imblearn` fails)."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    sys.modules["imblearn"] = None  # any `import imblearn...` now raises ImportError
    from collections import Counter
    import numpy as np
    import rmld
    from rmld.sklearn import RMLDAugmenter, _IMBLEARN
    from sklearn.base import BaseEstimator, clone
    assert not _IMBLEARN and isinstance(RMLDAugmenter(), BaseEstimator)
    images, labels = rmld.load_digits()
    keep = np.concatenate([np.flatnonzero(labels == c)[: 30 if c < 5 else 6] for c in range(10)])
    X, y = images[keep], labels[keep]
    augmenter = clone(RMLDAugmenter(random_state=0, backend="cpu"))
    X_res, y_res = augmenter.fit_resample(X, y)
    assert set(Counter(y_res.tolist()).values()) == {30}, Counter(y_res.tolist())
    assert X_res.shape == (300, 8, 8) and (X_res[: len(X)] == X).all()
    assert augmenter.sampling_strategy_[9] == 24
    try:
        RMLDAugmenter(sampling_strategy={5: 2}).fit_resample(X, y)
    except ValueError as error:
        assert "class 5 for 2 images, fewer than the 6" in str(error), error
    else:
        raise AssertionError("no error")
    print("ok")
""")


def test_without_imbalanced_learn():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr
