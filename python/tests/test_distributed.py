"""rmld.distributed on a real Ray cluster started here on loopback: a head node and a second
node joined with ``ray start --address``, 4 encode shards and 4 augment shards, one shard's
worker process killed while it runs each time; the job finishes (Ray retries the shard, seen in
the attempts log) and the merged output equals the single run byte for byte."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import ray

import rmld
import rmld.distributed

# FISTA's every iteration (tolerance 0): work a shard is still doing when its worker is killed.
# At the default gap stop, ADMM encodes a digits shard before the killer sees it running.
SETTINGS = dict(lasso_iterations=600, lasso_tolerance=0.0, seed=3, backend="cpu")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args, env):
    """`ray start ... --block` in its own process group (ended by its id at teardown)."""
    ray_bin = Path(sys.executable).parent / "ray"
    return subprocess.Popen(
        [str(ray_bin), "start", "--block", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def cluster():
    port = _free_port()
    # Ray's socket paths must stay short: a temporary folder right under /tmp.
    temp = tempfile.mkdtemp(prefix="rr", dir="/tmp")
    # Each shard attempt waits 1 s once logged (rmld.distributed's test hook): with a warm code
    # cache a shard can end within the killer's 0.3 s look, and none would be killed.
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RMLD_TEST_SHARD_PAUSE="1")
    # Ray turns token authentication on when ~/.ray/auth_token exists (any earlier local
    # ray.init() of the user's writes one), and then the driver of this private cluster was
    # refused (InvalidAuthToken): the cluster and its driver go without it.
    env["RAY_AUTH_MODE"] = "disabled"
    auth_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    common = ["--node-ip-address=127.0.0.1", "--num-gpus=0", "--num-cpus=2", "--disable-usage-stats"]
    head = _start(
        ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}", *common], env
    )
    procs = [head]
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                ray.init(address=address, log_to_driver=False)
                break
            except Exception:
                if time.monotonic() > deadline or head.poll() is not None:
                    raise
                time.sleep(1)
        procs.append(_start([f"--address={address}", *common], env))
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, "the second node did not join"
            assert procs[1].poll() is None, "ray start --address failed"
            time.sleep(0.5)
        yield address
    finally:
        ray.shutdown()
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        if auth_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth_mode


def _shard_workers():
    """Pids of the worker processes running a shard now (Ray titles them ray::_shard_task)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    pids = []
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if args.startswith("ray::_shard_task"):
            pids.append(int(pid))
    return pids


def _kill_a_running_shard(killed, log):
    """SIGKILLs the first worker seen running a shard (within 240 s: sample and augment run
    their warm-up task first, on a loaded machine for minutes), recording its pid. The
    worker must have logged its attempt in ``log`` first: Ray titles a worker ray::_shard_task
    when the task is assigned, and one killed before its first line (likely on a loaded machine)
    would leave no attempt to retry in the log."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        pids = _shard_workers()
        # Whole lines only: a worker may be writing its line as it is read.
        text = log.read_text() if log.exists() else ""
        logged = {int(line.split()[1]) for line in text.splitlines(keepends=True)
                  if line.endswith("\n") and len(line.split()) == 2}
        pids = [pid for pid in pids if pid in logged]
        if pids:
            time.sleep(0.3)
            try:
                # Still running a shard (not finished and idle) when it is killed.
                title = Path(f"/proc/{pids[0]}/cmdline").read_bytes()
                if not title.startswith(b"ray::_shard_task"):
                    continue
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            except (ProcessLookupError, FileNotFoundError):
                continue
            return
        time.sleep(0.05)


def _attempts(log):
    """The attempts log as {shard index: [pid of each attempt]}."""
    attempts = {}
    for line in log.read_text().splitlines():
        index, pid = line.split()
        attempts.setdefault(int(index), []).append(int(pid))
    return attempts


def test_four_shards_survive_a_killed_worker_and_equal_the_single_run(cluster, tmp_path):
    images, _ = rmld.load_digits()
    single = rmld.encode(images, out=tmp_path / "single", **SETTINGS)

    killed = []
    kill_one = lambda: _kill_a_running_shard(killed, tmp_path / "merged" / "shards" / "attempts.log")
    killer = threading.Thread(target=kill_one)
    killer.start()
    seen = []
    result = rmld.distributed.encode(
        images,
        shards=4,
        out=tmp_path / "merged",
        address=cluster,
        max_retries=3,
        progress=lambda phase, done, total: seen.append((phase, done, total)),
        keep_shards=True,
        **SETTINGS,
    )
    killer.join()
    assert killed, "no shard worker was seen running, so none was killed"
    # Both nodes ran shards? Not guaranteed by Ray; the second node must at least be alive.
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    assert ("shards", 4, 4) in seen
    for name in ["codes.npy", "reconstructions.npy", "dictionary.npy", "reconstructions.png"]:
        a = (tmp_path / "single" / name).read_bytes()
        b = (tmp_path / "merged" / name).read_bytes()
        assert a == b, f"{name} differs from the single run's"
    np.testing.assert_array_equal(result.codes, single.codes)
    strip = lambda r: {k: v for k, v in r.items() if k != "seconds"}
    merged_report = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert strip(merged_report) == strip(single.report)
    # The killed worker's shard ran again (the attempts log has its pid, then another).
    attempts = _attempts(tmp_path / "merged" / "shards" / "attempts.log")
    retried = [i for i, pids in attempts.items() if killed[0] in pids[:-1]]
    assert retried, f"the killed worker {killed[0]} ran no shard that was retried: {attempts}"


def test_sample_shards_on_the_cluster_equal_the_single_run(cluster, tmp_path):
    kw = dict(chains=6, samples=8, burn_in=2, steps=4, seed=5, backend="cpu")
    single = rmld.sample(out=tmp_path / "single", **kw)
    result = rmld.distributed.sample(shards=3, out=tmp_path / "merged", address=cluster, **kw)
    for name in ["codes.npy", "images.npy", "dictionary.npy", "samples.png"]:
        a = (tmp_path / "single" / name).read_bytes()
        b = (tmp_path / "merged" / name).read_bytes()
        assert a == b, f"{name} differs from the single run's"
    np.testing.assert_array_equal(result.codes, single.codes)
    np.testing.assert_array_equal(result.images, single.images)
    assert result.report["diagnostics"]["verdict"] == single.report["diagnostics"]["verdict"]
    assert not (tmp_path / "merged" / "shards").exists()


@pytest.mark.parametrize("method", ["mala", "hmc"])
def test_adaptive_sample_shards_start_from_the_warm_up_and_equal_the_single_run(
    cluster, tmp_path, method
):
    # The method's defaults: an automatic burn-in with the step size adapted across all chains.
    kw = dict(method=method, chains=6, samples=10, steps=4, seed=5, backend="cpu")
    single = rmld.sample(out=tmp_path / "single", **kw)
    assert single.report["adaptation"] is not None
    result = rmld.distributed.sample(
        shards=3, out=tmp_path / "merged", address=cluster, keep_shards=True, **kw
    )
    assert (tmp_path / "merged" / "shards" / "warm-up" / "warm-up.json").exists()
    for name in ["codes.npy", "images.npy", "dictionary.npy", "samples.png"]:
        a = (tmp_path / "single" / name).read_bytes()
        b = (tmp_path / "merged" / name).read_bytes()
        assert a == b, f"{method}: {name} differs from the single run's"
    np.testing.assert_array_equal(result.codes, single.codes)
    for key in ["burn_in", "kept_samples", "adaptation", "burn_in_auto"]:
        assert result.report.get(key) == single.report.get(key), key


def test_merge_refuses_a_missing_shard(tmp_path):
    images, _ = rmld.load_digits()
    dirs = []
    for i in range(3):
        d = tmp_path / f"shard-{i}"
        rmld.encode(images[:30], out=d, shard=f"{i}/3", lasso_iterations=10, backend="cpu")
        dirs.append(os.fspath(d))
    with pytest.raises(ValueError, match="missing shard 1/3"):
        rmld._rmld.merge_shards(os.fspath(tmp_path / "out"), [dirs[0], dirs[2]])
    assert not (tmp_path / "out").exists()


def test_a_refused_setting_fails_the_run_at_once_without_retries(cluster, tmp_path):
    # The shards refuse the setting (a ValueError), which every attempt would: no shard is
    # tried twice (with retries of every exception, shards were tried up to max_retries + 1).
    images, _ = rmld.load_digits()
    with pytest.raises(ValueError, match="lasso_iterations: must be at least 1"):
        rmld.distributed.encode(images[:40], shards=2, out=tmp_path / "run", address=cluster,
                                max_retries=3, lasso_iterations=0, backend="cpu")
    attempts = _attempts(tmp_path / "run" / "shards" / "attempts.log")
    assert all(len(pids) == 1 for pids in attempts.values()), attempts


def test_merge_of_shards_run_by_hand_on_an_array_says_it_cannot_read_the_array(tmp_path):
    # Each shard sampled an array in memory; the merge reads the data again to check it, and
    # an array cannot be: it says so, rather than that the data changed.
    images, _ = rmld.load_digits()
    images = images[100:260]
    dirs = []
    for i in range(2):
        d = tmp_path / f"shard-{i}"
        rmld.sample(images, out=d, shard=f"{i}/2", chains=4, samples=4, burn_in=2, steps=2,
                    seed=3, backend="cpu")
        dirs.append(os.fspath(d))
    with pytest.raises(OSError, match=r"data given in memory \(<numpy array>\).*NPY file"):
        rmld._rmld.merge_shards(os.fspath(tmp_path / "out"), dirs)
    assert not (tmp_path / "out").exists()


AUGMENT = dict(
    preset="paper", limit=600, ratio=3.0, samples=4, burn_in=60, lasso_iterations=600,
    reencode=True, seed=11, backend="cpu",
)
AUGMENT_FILES = [
    "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "generated-images-idx3-ubyte.gz",
    "generated-labels-idx1-ubyte.gz", "generated-codes.npy", "generated-labels.npy",
    "generated.png", "codes.npy", "labels.npy", "dictionary.npy",
]


def _without_timings(value):
    # `code_cache` and `lasso` say how a process encoded (a merge encodes nothing), as in
    # tests/shard.rs.
    timings = {
        "seconds",
        "phase_seconds",
        "timings",
        "generation_seconds",
        "samples_per_second",
        "code_cache",
        "lasso",
    }
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in timings}
    return value


def test_four_augment_shards_survive_a_killed_worker_and_equal_the_single_run(cluster, tmp_path):
    rmld.augment(out=tmp_path / "single", **AUGMENT)
    killed = []
    log = tmp_path / "merged" / "shards" / "attempts.log"
    killer = threading.Thread(target=_kill_a_running_shard, args=(killed, log))
    killer.start()
    seen = []
    result = rmld.distributed.augment(
        shards=4,
        out=tmp_path / "merged",
        address=cluster,
        max_retries=3,
        progress=lambda phase, done, total: seen.append((phase, done, total)),
        keep_shards=True,
        **AUGMENT,
    )
    killer.join()
    assert killed, "no shard worker was seen running, so none was killed"
    attempts = _attempts(tmp_path / "merged" / "shards" / "attempts.log")
    retried = [i for i, pids in attempts.items() if killed[0] in pids[:-1]]
    assert retried, f"the killed worker {killed[0]} ran no shard that was retried: {attempts}"
    assert sorted(attempts) == [0, 1, 2, 3]
    assert ("shards", 4, 4) in seen
    for name in AUGMENT_FILES:
        a = (tmp_path / "single" / name).read_bytes()
        b = (tmp_path / "merged" / name).read_bytes()
        assert a == b, f"{name} differs from the single run's"
    single_report = json.loads((tmp_path / "single" / "report.json").read_text())
    assert "quality" in single_report
    assert _without_timings(result.report) == _without_timings(single_report)
    generated = np.load(tmp_path / "single" / "generated-labels.npy")
    np.testing.assert_array_equal(result.labels, generated)
    assert result.images.shape[0] == len(generated)


def test_adaptive_augment_shards_start_from_the_warm_up_and_equal_the_single_run(
    cluster, tmp_path
):
    kw = dict(preset="paper", method="mala", adapt=True, burn_in="auto", limit=150, ratio=5.0,
              samples=6, lasso_iterations=30, seed=4, backend="cpu")
    rmld.augment(out=tmp_path / "single", **kw)
    result = rmld.distributed.augment(shards=3, out=tmp_path / "merged", address=cluster, **kw)
    for name in AUGMENT_FILES:
        a = (tmp_path / "single" / name).read_bytes()
        b = (tmp_path / "merged" / name).read_bytes()
        assert a == b, f"{name} differs from the single run's"
    single_report = json.loads((tmp_path / "single" / "report.json").read_text())
    assert "adaptation" in single_report
    assert _without_timings(result.report) == _without_timings(single_report)


def _report_diff(single, merged, path=""):
    """The keys whose values differ between two reports (nested keys joined by dots)."""
    if isinstance(single, dict) and isinstance(merged, dict):
        return [d for k in sorted(set(single) | set(merged))
                for d in _report_diff(single.get(k), merged.get(k), f"{path}.{k}")]
    return [] if single == merged else [path]


def test_augment_shards_of_arrays_equal_the_single_run(cluster, tmp_path):
    # Arrays reach the shards and the merge (which loads the originals again) as NPY files in
    # OUT/shards; they were refused before.
    images, labels = rmld.load_digits()
    kw = dict(preset="paper", ratio=3.0, samples=4, burn_in=2, lasso_iterations=50, seed=11,
              backend="cpu")
    rmld.augment(images[:300], labels[:300], out=tmp_path / "single", **kw)
    result = rmld.distributed.augment(
        images[:300], labels[:300], shards=2, out=tmp_path / "merged", address=cluster, **kw
    )
    for name in AUGMENT_FILES:
        a = (tmp_path / "single" / name).read_bytes()
        b = (tmp_path / "merged" / name).read_bytes()
        assert a == b, f"{name} differs from the single run's"
    single_report = json.loads((tmp_path / "single" / "report.json").read_text())
    # The shards' copy of the arrays is removed, so the report names the data as the single
    # run's does, not as the shards read it (a file no longer there).
    assert _report_diff(_without_timings(single_report), _without_timings(result.report)) == []
    assert result.report["dataset"]["source"] == "<numpy array>"
    written = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert written == result.report
    assert not (tmp_path / "merged" / "shards").exists()


def test_sample_shards_of_an_array_equal_the_single_run(cluster, tmp_path):
    # float64: stored for the shards as the float32 the library converts it to in memory.
    images, _ = rmld.load_digits()
    images = images[:200].astype(np.float64)
    kw = dict(chains=4, samples=6, burn_in=2, steps=4, seed=5, backend="cpu")
    single = rmld.sample(images, out=tmp_path / "single", **kw)
    result = rmld.distributed.sample(
        images, shards=2, out=tmp_path / "merged", address=cluster, keep_shards=True, **kw
    )
    for name in ["codes.npy", "images.npy", "dictionary.npy", "samples.png"]:
        a = (tmp_path / "single" / name).read_bytes()
        b = (tmp_path / "merged" / name).read_bytes()
        assert a == b, f"{name} differs from the single run's"
    np.testing.assert_array_equal(result.codes, single.codes)
    np.testing.assert_array_equal(result.images, single.images)
    skip = {"seconds", "timings", "run_id", "peak_rss_bytes"}
    strip = lambda r: {k: v for k, v in r.items() if k not in skip}
    assert _report_diff(strip(single.report), strip(result.report)) == [".dataset.source"]
    stored = Path(result.report["dataset"]["source"])
    assert stored == (tmp_path / "merged" / "shards" / "data.npy").resolve()
    np.testing.assert_array_equal(np.load(stored), images.astype(np.float32))


def test_array_the_library_refuses_is_refused_before_any_file_or_task(tmp_path):
    bad = np.full((3, 8, 8), 300, dtype=np.int64)
    with pytest.raises(ValueError, match="integer pixels must lie in 0..255"):
        rmld.sample(bad, backend="cpu", chains=2, samples=2)
    with pytest.raises(ValueError, match="integer pixels must lie in 0..255"):
        rmld.distributed.sample(bad, shards=2, out=tmp_path / "run", backend="cpu")
    nan = np.zeros((3, 8, 8))
    nan[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match="non-finite value .* at flat index 83"):
        rmld.distributed.augment(nan, np.zeros(3, dtype=int), shards=2, out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def _alive(pid):
    """Whether process ``pid`` exists and is no zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _files(root):
    """Every file under ``root`` with its size and modification time."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_a_shard_failed_for_good_cancels_the_others_before_the_error(cluster, tmp_path):
    # Two long shards (FISTA's every iteration); once both run, one's worker is killed. With no
    # retries that shard fails for good: the driver must stop the other before it raises.
    images, _ = rmld.load_digits()
    log = tmp_path / "run" / "shards" / "attempts.log"
    killed = []

    def kill_one_once_both_run():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed:
            text = log.read_text() if log.exists() else ""
            attempts = [int(line.split()[1]) for line in text.splitlines(keepends=True)
                        if line.endswith("\n") and len(line.split()) == 2]
            running = set(_shard_workers())
            if len(attempts) == 2 and all(pid in running for pid in attempts):
                os.kill(attempts[0], signal.SIGKILL)
                killed.append(attempts[0])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_once_both_run)
    killer.start()
    try:
        with pytest.raises(ray.exceptions.RayError):
            rmld.distributed.encode(
                images, shards=2, out=tmp_path / "run", address=cluster, max_retries=0,
                lasso_iterations=100_000, lasso_tolerance=0.0, backend="cpu",
            )
    finally:
        killer.join()
    assert killed, "the two shards were not seen running together, so none was killed"
    # As the error is raised, no worker runs a shard any more: the other was cancelled (its
    # worker ended), not left computing, and nothing is written into OUT/shards afterwards.
    assert _shard_workers() == []
    pids = [pid for _, pids in _attempts(log).items() for pid in pids]
    assert len(pids) == 2 and not [pid for pid in pids if _alive(pid)]
    before = _files(tmp_path / "run" / "shards")
    time.sleep(2)
    assert _files(tmp_path / "run" / "shards") == before
    assert len(log.read_text().splitlines()) == 2, "a cancelled shard was started again"
