"""Files that are checked before use: the download cache, SHA verification, and d2l's
``download`` of the files registered in ``DATA_HUB``.

Remote files are fetched with pooch: the file is streamed to a temporary name in the
cache folder, its digest (SHA-256, or SHA-1 for d2l's ``DATA_HUB`` entries) is compared with
the published one, and only then is it moved into place. A partial download or a file with
the wrong checksum is therefore never cached, and a cached file whose checksum no longer
matches is never used.

The cache folder is ``$D2LITE_DATA`` when set, else ``~/.cache/d2lite``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tarfile
import zipfile
from pathlib import Path

from .unattended import DATA_DIR, DATASET, FASHION_MNIST_URL

__all__ = ["ChecksumError", "DatasetUnavailableError", "RemoteDataset", "FASHION_MNIST", "cache_dir",
           "sha256_of", "verify_sha256", "fetch", "DATA_HUB", "DATA_URL", "download",
           "download_extract", "download_all"]

class ChecksumError(ValueError):
    """A data file's SHA-256 differs from the known one: it is corrupt, partial or another file."""


class DatasetUnavailableError(RuntimeError):
    """A data set is neither in the cache nor downloadable right now."""


@dataclasses.dataclass(frozen=True)
class RemoteDataset:
    """Where a data set's files live online and what their SHA-256 digests are.

    name: folder name inside the cache. base_url: URL prefix of the files. url_env: name
    of an environment variable that, when set, replaces base_url (a mirror, or a local
    server in tests). sha256: file name -> expected hex digest.
    """

    name: str
    title: str
    base_url: str
    url_env: str
    sha256: dict[str, str]


# Published SHA-256 digests of the four Fashion-MNIST files, as listed by TensorFlow Datasets
# (tensorflow/datasets, tensorflow_datasets/url_checksums/fashion_mnist.txt, with the sizes
# 26421880, 29515, 4422102 and 5148 bytes) and, identically, by torchvision's prototype
# datasets (torchvision/prototype/datasets/_builtin/mnist.py). The base URL is the one
# torchvision (and hence d2l's load_data_fashion_mnist) downloads from.
FASHION_MNIST = RemoteDataset(
    name="fashion_mnist",
    title="Fashion-MNIST",
    base_url="http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
    url_env=FASHION_MNIST_URL,
    sha256={
        "train-images-idx3-ubyte.gz": "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        "train-labels-idx1-ubyte.gz": "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        "t10k-images-idx3-ubyte.gz": "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        "t10k-labels-idx1-ubyte.gz": "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
    },
)


def cache_dir() -> Path:
    """The folder that holds downloaded data sets: ``$D2LITE_DATA`` or ``~/.cache/d2lite``."""
    return Path(os.environ.get(DATA_DIR) or Path.home() / ".cache" / "d2lite").expanduser()


def sha256_of(path) -> str:
    """Hex SHA-256 digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path, expected: str) -> Path:
    """Return ``path`` if its SHA-256 is ``expected``; raise ChecksumError otherwise."""
    found = sha256_of(path)
    if found != expected:
        raise ChecksumError(
            f"{path}: SHA-256 is {found}, expected {expected}. The file is corrupt, incomplete or "
            "a different file; delete it and download or copy it again."
        )
    return Path(path)


def _reason(err: Exception) -> str:
    """The root cause of a requests error, without urllib3's retry wrapping."""
    inner = err.args[0] if err.args else None
    inner = getattr(inner, "reason", inner)
    return f"{type(err).__name__}: {inner if isinstance(inner, Exception) else err}"


def _where_to_put(remote: RemoteDataset, folder: Path) -> str:
    files = ", ".join(remote.sha256)
    return (
        f"To use {remote.title} offline, copy the files {files} into {folder} (set {DATA_DIR} to "
        f"use another cache folder).\nOr use the MNIST digits bundled with d2lite: set "
        f"{DATASET}=mnist5k, or call d2lite.load_data('mnist5k', batch_size)."
    )


def fetch(remote: RemoteDataset, root=None, base_url: str | None = None, progressbar: bool = True) -> dict[str, Path]:
    """Make sure every file of ``remote`` is in the cache with the right SHA-256.

    root: cache folder (default ``cache_dir()``); files go to ``root/remote.name/``.
    base_url: overrides ``$<remote.url_env>`` and ``remote.base_url``.
    Returns file name -> verified local path. Files already cached with the right
    checksum are not downloaded again; the others are downloaded with a progress bar.
    Raises ChecksumError when a download does not match its checksum (nothing is
    cached) and DatasetUnavailableError when a file cannot be downloaded.
    """
    import pooch  # imported here: only a download needs it
    import requests

    folder = Path(root or cache_dir()).expanduser() / remote.name
    base = base_url or os.environ.get(remote.url_env) or remote.base_url
    base = base if base.endswith("/") else base + "/"
    downloader = pooch.HTTPDownloader(progressbar=progressbar, timeout=30)
    paths, needed = {}, {}
    for fname, digest in remote.sha256.items():
        target = folder / fname
        if not target.exists():
            needed[fname] = "missing"
        elif sha256_of(target) != digest:
            needed[fname] = "cached with the wrong SHA-256, so not used"
        else:
            paths[fname] = target
    for fname in list(needed):
        try:
            pooch.retrieve(base + fname, known_hash=f"sha256:{remote.sha256[fname]}", fname=fname,
                           path=folder, downloader=downloader)
        except ValueError as err:  # pooch: hash mismatch; the temporary file is already deleted
            if "hash" not in str(err):
                raise
            raise ChecksumError(
                f"Downloaded {base + fname} but its SHA-256 does not match the published one, so it "
                f"was not cached. The server sent a different or damaged file ({err}). "
                + _where_to_put(remote, folder)
            ) from None
        except (requests.RequestException, OSError) as err:
            status = "; ".join(f"{why}: {', '.join(n for n in needed if needed[n] == why)}"
                               for why in dict.fromkeys(needed.values()))
            raise DatasetUnavailableError(
                f"{remote.title} is not complete in the cache folder {folder} ({status}), and "
                f"downloading {base + fname} failed: {_reason(err)}.\n" + _where_to_put(remote, folder)
            ) from None
        paths[fname] = verify_sha256(folder / fname, remote.sha256[fname])
        del needed[fname]
    return {fname: paths[fname] for fname in remote.sha256}


# d2l's registry of downloadable files: name -> (URL, hex SHA-1 digest). Chapters add their own
# entries (``d2l.DATA_HUB['x'] = (d2l.DATA_URL + 'x.csv', '<sha1>')``) before ``d2l.download('x')``.
DATA_URL = "http://d2l-data.s3-accelerate.amazonaws.com/"
DATA_HUB: dict[str, tuple[str, str]] = {
    # The two files of d2l's Kaggle house-price section, with the digests that section gives.
    "kaggle_house_train": (DATA_URL + "kaggle_house_pred_train.csv", "585e9cc93e70b39160e7921475f9bcd7d31219ce"),
    "kaggle_house_test": (DATA_URL + "kaggle_house_pred_test.csv", "fa19780a7b011d9b009e8bff8e99922a8ee2eb90"),
}
_DIGEST_ALGORITHMS = {40: "sha1", 64: "sha256"}  # hex length -> algorithm


def _known_hash(name: str, digest: str) -> str:
    """pooch's ``"algorithm:hex"`` for a DATA_HUB digest (SHA-1 as in d2l, or SHA-256)."""
    algorithm = _DIGEST_ALGORITHMS.get(len(digest))
    if algorithm is None or not re.fullmatch(r"[0-9a-fA-F]+", digest):
        raise ValueError(f"DATA_HUB[{name!r}]: the digest must be 40 (SHA-1) or 64 (SHA-256) hex digits, "
                         f"got {digest!r}")
    return f"{algorithm}:{digest.lower()}"


def _d2l_folder() -> Path:
    """Where ``download`` keeps DATA_HUB files by default: ``cache_dir()/"d2l"``."""
    return cache_dir() / "d2l"


def download(name: str, cache_dir=None, *, progressbar: bool = True) -> str:
    """Download the file registered as ``DATA_HUB[name] = (url, digest)`` and return its local
    path (d2l's ``download``); a cached copy with the right digest is used as it is.

    cache_dir: the folder to keep it in (default ``cache_dir()/"d2l"``; d2l's is ``../data``).
    digest: hex SHA-1 (as d2l registers files) or SHA-256. Unlike d2l's, the download itself is
    checked too: ChecksumError when the server sends a different file (nothing is kept), and
    DatasetUnavailableError, saying where to copy the file by hand, when it cannot be fetched.
    """
    import pooch  # imported here: only a download needs it
    import requests

    if name not in DATA_HUB:
        known = ", ".join(sorted(DATA_HUB)) or "none"
        raise KeyError(f"download: {name!r} is not in DATA_HUB (registered: {known}); register it first "
                       f"with DATA_HUB[{name!r}] = (url, sha1_hex)")
    url, digest = DATA_HUB[name]
    known_hash = _known_hash(name, digest)
    folder = Path(cache_dir).expanduser() if cache_dir is not None else _d2l_folder()
    fname = url.rsplit("/", 1)[-1]
    try:
        path = pooch.retrieve(url, known_hash=known_hash, fname=fname, path=folder,
                              downloader=pooch.HTTPDownloader(progressbar=progressbar, timeout=30))
    except ValueError as err:  # pooch: the downloaded file's hash differs; it was not kept
        if "hash" not in str(err):
            raise
        raise ChecksumError(f"download: {url} does not have the {known_hash.split(':')[0].upper()} "
                            f"registered in DATA_HUB[{name!r}], so it was not kept ({err}).") from None
    except (requests.RequestException, OSError) as err:
        raise DatasetUnavailableError(
            f"download: {name!r} is not in {folder} and downloading {url} failed: {_reason(err)}.\n"
            f"To work offline, copy the file to {folder / fname} (a copy with the registered digest "
            "is used as it is)."
        ) from None
    return str(path)


def download_extract(name: str, folder: str | None = None) -> str:
    """Download ``DATA_HUB[name]`` (a .zip, .tar, .tar.gz or .tgz archive), unpack it beside the
    download, and return the folder it unpacked to: ``folder`` inside the cache folder when
    given, else the archive's path without its last extension (d2l's convention).
    Tar members that would land outside the cache folder (absolute paths, ``..``) are refused."""
    fname = download(name)
    base_dir = os.path.dirname(fname)
    data_dir, ext = os.path.splitext(fname)
    if ext == ".zip":
        with zipfile.ZipFile(fname) as archive:
            archive.extractall(base_dir)
    elif ext in (".tar", ".gz", ".tgz"):
        with tarfile.open(fname) as archive:
            archive.extractall(base_dir, filter="data")
    else:
        raise ValueError(f"download_extract: {fname} is not a .zip, .tar, .tar.gz or .tgz archive; "
                         f"use download({name!r}) for a plain file")
    return os.path.join(base_dir, folder) if folder else data_dir


def download_all() -> list[str]:
    """Download every file registered in ``DATA_HUB``; returns their local paths."""
    return [download(name) for name in DATA_HUB]
