"""d2lite.downloads, for real: a small HTTP server on 127.0.0.1 serves IDX files written here.

Nothing is mocked: pooch downloads over a socket from a server that can serve a file whole,
cut the connection mid-body, or not be there at all.
"""
import gzip
import hashlib
import http.server
import os
import socket
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import d2lite
from d2lite import FASHION_MNIST, ChecksumError, DatasetUnavailableError, RemoteDataset, fetch
from d2lite.unattended import DATA_DIR

FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def idx_gz(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return gzip.compress(header + array.tobytes(), mtime=0)


def small_dataset(n_train=30, n_test=10) -> dict[str, bytes]:
    """Four Fashion-MNIST-shaped IDX files with random pixels and labels."""
    rng = np.random.default_rng(0)
    files = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        files[f"{prefix}-images-idx3-ubyte.gz"] = idx_gz(rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        files[f"{prefix}-labels-idx1-ubyte.gz"] = idx_gz(rng.integers(0, 10, (n,), dtype=np.uint8))
    return files


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FileServer:
    """Serves ``files`` at http://127.0.0.1:<port>/<name>; ``cut`` names are sent half and the
    connection closed (with a Content-Length announcing the whole file, or, for names in
    ``cut_without_length``, with no length so the cut looks like a normal end of body)."""

    def __init__(self, files: dict[str, bytes]):
        self.files, self.cut, self.cut_without_length, self.requests = dict(files), set(), set(), []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                name = self.path.lstrip("/")
                server.requests.append(name)
                if name not in server.files:
                    self.send_error(404)
                    return
                body = server.files[name]
                self.send_response(200)
                if name not in server.cut_without_length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if name in server.cut or name in server.cut_without_length:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def files():
    return small_dataset()


@pytest.fixture(autouse=True)
def no_proxy_for_localhost(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # never route 127.0.0.1 through a proxy


@pytest.fixture
def server(files):
    s = FileServer(files)
    yield s
    s.stop()


def remote_for(files, **changes) -> RemoteDataset:
    digests = {name: sha256(data) for name, data in files.items()}
    digests.update(changes)
    return RemoteDataset(name="tiny", title="Tiny-MNIST", base_url="http://127.0.0.1:9/",
                         url_env="D2LITE_TEST_UNUSED_URL", sha256=digests)


_refusing: list[socket.socket] = []


@pytest.fixture(autouse=True, scope="module")
def _a_port_that_refuses():
    """A socket bound and never listening while these tests run: a connection to its port is refused, and no
    other job can take the port in between (as it could once a socket that found a free port was closed)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        _refusing.append(bound)
        yield
        _refusing.clear()


def closed_port_url() -> str:
    return f"http://127.0.0.1:{_refusing[0].getsockname()[1]}/"


def test_good_files_are_downloaded_verified_cached_and_not_downloaded_again(tmp_path, server, files):
    remote = remote_for(files)
    paths = fetch(remote, root=tmp_path, base_url=server.url)
    assert sorted(server.requests) == sorted(FILES)
    for name, data in files.items():
        assert paths[name] == tmp_path / "tiny" / name and paths[name].read_bytes() == data
    assert sorted(p.name for p in (tmp_path / "tiny").iterdir()) == sorted(FILES)  # no temporary leftovers
    server.stop()  # the cache now suffices, offline too
    again = fetch(remote, root=tmp_path, base_url=closed_port_url())
    assert again == paths and len(server.requests) == 4


def test_a_download_with_the_wrong_checksum_is_rejected_and_not_cached(tmp_path, server, files):
    remote = remote_for(files, **{"t10k-images-idx3-ubyte.gz": "0" * 64})
    with pytest.raises(ChecksumError, match=r"t10k-images-idx3-ubyte.gz but its SHA-256 does not match.*not cached"):
        fetch(remote, root=tmp_path, base_url=server.url)
    assert "t10k-images-idx3-ubyte.gz" not in [p.name for p in (tmp_path / "tiny").iterdir()]
    assert sorted(p.name for p in (tmp_path / "tiny").iterdir()) == ["train-images-idx3-ubyte.gz",
                                                                    "train-labels-idx1-ubyte.gz"]


def test_an_interrupted_download_is_not_cached(tmp_path, server, files):
    server.cut.add("train-images-idx3-ubyte.gz")
    with pytest.raises(DatasetUnavailableError, match="downloading http://127.0.0.1:[0-9]+/train-images-idx3-ubyte.gz failed"):
        fetch(remote_for(files), root=tmp_path, base_url=server.url)
    assert list((tmp_path / "tiny").iterdir()) == []


def test_a_cut_download_that_looks_complete_is_caught_by_the_checksum(tmp_path, server, files):
    server.cut_without_length.add("train-labels-idx1-ubyte.gz")
    with pytest.raises(ChecksumError, match="train-labels-idx1-ubyte.gz"):
        fetch(remote_for(files), root=tmp_path, base_url=server.url)
    assert [p.name for p in (tmp_path / "tiny").iterdir()] == ["train-images-idx3-ubyte.gz"]


def test_offline_without_a_cache_gives_one_clear_error_saying_where_to_put_the_files(tmp_path):
    with pytest.raises(DatasetUnavailableError) as caught:
        fetch(FASHION_MNIST, root=tmp_path, base_url=closed_port_url(), progressbar=False)
    message = str(caught.value)
    assert str(tmp_path / "fashion_mnist") in message
    assert all(name in message for name in FILES)
    assert "D2LITE_DATASET=mnist5k" in message and "D2LITE_DATA" in message
    assert caught.value.__suppress_context__  # one error, not a chain of library tracebacks
    assert not (tmp_path / "fashion_mnist").exists() or not any((tmp_path / "fashion_mnist").iterdir())


def test_a_corrupt_cached_file_is_not_used(tmp_path, server, files):
    remote = remote_for(files)
    cached = fetch(remote, root=tmp_path, base_url=server.url)["t10k-labels-idx1-ubyte.gz"]
    corrupt = bytearray(cached.read_bytes())
    corrupt[-1] ^= 0xFF
    cached.write_bytes(bytes(corrupt))
    # Offline: the corrupt copy is refused, and the error says which file and why.
    with pytest.raises(DatasetUnavailableError,
                       match="cached with the wrong SHA-256, so not used: t10k-labels-idx1-ubyte.gz"):
        fetch(remote, root=tmp_path, base_url=closed_port_url(), progressbar=False)
    # Online: only that file is downloaded again, and verified.
    paths = fetch(remote, root=tmp_path, base_url=server.url)
    assert server.requests[4:] == ["t10k-labels-idx1-ubyte.gz"]
    assert paths["t10k-labels-idx1-ubyte.gz"].read_bytes() == files["t10k-labels-idx1-ubyte.gz"]


def test_load_data_fashion_mnist_downloads_into_d2lite_data_from_the_url_in_the_environment(
        tmp_path, server, files, monkeypatch, capsys):
    for name, data in files.items():  # our small files stand in for the published ones
        monkeypatch.setitem(FASHION_MNIST.sha256, name, sha256(data))
    monkeypatch.setenv("D2LITE_DATA", str(tmp_path))
    monkeypatch.setenv("D2LITE_FASHION_MNIST_URL", server.url.rstrip("/"))
    monkeypatch.delenv("D2LITE_DATASET", raising=False)
    train_iter, test_iter = d2lite.load_data_fashion_mnist(8, resize=14)
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and "Fashion-MNIST" in line and str(tmp_path / "fashion_mnist") in line
    X, y = next(iter(test_iter))
    assert X.shape == (8, 1, 14, 14) and X.dtype == torch.float32 and y.dtype == torch.int64
    assert len(train_iter.dataset) == 30 and len(test_iter) == 2
    assert sorted(p.name for p in (tmp_path / "fashion_mnist").iterdir()) == sorted(FILES)


def test_the_published_fashion_mnist_digests_are_complete():
    assert sorted(FASHION_MNIST.sha256) == sorted(FILES)
    assert all(len(d) == 64 and int(d, 16) >= 0 for d in FASHION_MNIST.sha256.values())


def test_cache_dir_follows_d2lite_data(monkeypatch, tmp_path):
    monkeypatch.setenv("D2LITE_DATA", str(tmp_path / "x"))
    assert d2lite.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("D2LITE_DATA")
    assert d2lite.cache_dir().parts[-2:] == (".cache", "d2lite")


# ---------------------------------------------------------------- d2l's download(name) and DATA_HUB

@pytest.fixture
def hub():
    """d2lite's DATA_HUB, restored afterwards to what it held (a chapter adds its own entries)."""
    saved = dict(d2lite.DATA_HUB)
    yield d2lite.DATA_HUB
    d2lite.DATA_HUB.clear()
    d2lite.DATA_HUB.update(saved)


def test_d2l_download_registers_by_name_checks_sha1_and_uses_the_cached_copy(tmp_path, hub, monkeypatch):
    """d2l.DATA_HUB[name] = (url, sha1); d2l.download(name) returns the local path; a second call
    (server gone) finds the cached copy; with no cache_dir it goes under $D2LITE_DATA/d2l."""
    import d2lite as d2l

    body = b"Id,SalePrice\n1,208500\n"
    s = FileServer({"house.csv": body})
    try:
        d2l.DATA_HUB["house"] = (s.url + "house.csv", hashlib.sha1(body).hexdigest())
        fname = d2l.download("house", cache_dir=tmp_path / "data", progressbar=False)
        monkeypatch.setenv(DATA_DIR, str(tmp_path / "cache"))
        default = d2l.download("house", progressbar=False)
    finally:
        s.stop()
    assert isinstance(fname, str) and Path(fname).read_bytes() == body
    assert fname == str(tmp_path / "data" / "house.csv") and default == str(tmp_path / "cache" / "d2l" / "house.csv")
    assert d2l.download("house", cache_dir=tmp_path / "data") == fname  # no server: the verified copy
    assert s.requests == ["house.csv", "house.csv"]


def test_d2l_download_refuses_a_file_with_another_digest_and_says_what_to_do(tmp_path, hub):
    import d2lite as d2l

    s = FileServer({"a.csv": b"the server's file"})
    try:
        d2l.DATA_HUB["a"] = (s.url + "a.csv", hashlib.sha1(b"the published file").hexdigest())
        with pytest.raises(ChecksumError, match="does not have the SHA1 registered in DATA_HUB\\['a'\\]"):
            d2l.download("a", cache_dir=tmp_path, progressbar=False)
    finally:
        s.stop()
    assert not (tmp_path / "a.csv").exists()
    d2l.DATA_HUB["b"] = (closed_port_url() + "b.csv", "0" * 40)
    with pytest.raises(DatasetUnavailableError, match="copy the file to .*b.csv"):
        d2l.download("b", cache_dir=tmp_path, progressbar=False)
    with pytest.raises(KeyError, match="'c' is not in DATA_HUB .*register it first"):
        d2l.download("c")
    d2l.DATA_HUB["d"] = ("http://127.0.0.1:9/d.csv", "not-a-digest")
    with pytest.raises(ValueError, match="40 \\(SHA-1\\) or 64 \\(SHA-256\\) hex digits"):
        d2l.download("d")


def test_d2l_download_extract_unpacks_beside_the_download_and_blocks_escaping_members(tmp_path, hub, monkeypatch):
    import io
    import tarfile

    import d2lite as d2l

    def tar_gz(members: dict[str, bytes]) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    good, evil = tar_gz({"pics/a.txt": b"A"}), tar_gz({"../outside.txt": b"X"})
    monkeypatch.setenv(DATA_DIR, str(tmp_path))
    s = FileServer({"pics.tar.gz": good, "evil.tar.gz": evil})
    try:
        d2l.DATA_HUB["pics"] = (s.url + "pics.tar.gz", hashlib.sha1(good).hexdigest())
        d2l.DATA_HUB["evil"] = (s.url + "evil.tar.gz", hashlib.sha1(evil).hexdigest())
        folder = d2l.download_extract("pics", "pics")
        with pytest.raises(tarfile.OutsideDestinationError):
            d2l.download_extract("evil")
    finally:
        s.stop()
    assert Path(folder, "a.txt").read_text() == "A"
    assert not (tmp_path / "outside.txt").exists()
