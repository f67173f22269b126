"""Extract the slice bench's fresh held-out set (mini-swe-agent trajectories) outside the repo.

    python bench/slice_fresh_set.py [--git-dir DIR] [--out ~/.cache/contextfork-bench/heldout2]

The set is 20 SWE-bench trajectories of gruckion/mini-swe-agent (gemini-3-pro, 74 %), chosen by
a rule fixed before any slicer rule was changed against them: at commit ``COMMIT``, every
``swebench_results/20251118_gemini-3-pro-74pct/trajs/<id>/<id>.traj.json``, sorted by id, minus
the five ids already in ``../shared/data/transcripts/mini-swe-agent`` (the dev set), then every
25th from the first (indices 0, 25, …, 475). Their ids and SHA-256 are pinned below; the script
refuses a file whose bytes differ.

``--git-dir``: a clone of the repository holding ``COMMIT`` (a bare one is fine); without it the
script clones ``https://github.com/gruckion/mini-swe-agent`` (blobs on demand) into a temporary
directory. Needs network or that clone; nothing in the test suite or CI runs it. The bench reads
the result with ``python bench/slice_bench.py --split fresh`` (default directory as here) and
skips the split with one line when it is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = "https://github.com/gruckion/mini-swe-agent"
COMMIT = "d12a71affd95403b036b2bdbd827349b77bfffb9"
PREFIX = "swebench_results/20251118_gemini-3-pro-74pct/trajs/"
DEV_IDS = ("sphinx-doc__sphinx-9229", "pytest-dev__pytest-7490", "sympy__sympy-19040",
           "matplotlib__matplotlib-24177", "django__django-16560")
STEP, COUNT = 25, 20
DEFAULT_OUT = Path.home() / ".cache/contextfork-bench/heldout2"

# filled in once from the rule above at COMMIT (the rule is checked against it on every run)
PINNED: dict[str, str] = {
    "astropy__astropy-12907": "a0e96930b1e0a396e2830931cd9e1c51989cb8ab282d825f83bf2e6bb837c51c",
    "django__django-10914": "b8950d600a47c174b24599f367a212749143c717ec82ee866981fd683e8222e1",
    "django__django-11477": "b9f517497ad72842d8428c6ca05d58324ac9cd38ff50816487243eb02c98173b",
    "django__django-12209": "84a953ceb9ccdab3181be7929ca2fbd3bbd6d36040b9f24a2b00785967133480",
    "django__django-13128": "fedeed8519a025363339ab14cfdd2a4e57e6c6b5172922d41790eab055264115",
    "django__django-13741": "645306e97c96cbd9cc51c0e8b4844e2b318f02b64e36bfd63f6c3eebffc17941",
    "django__django-14349": "5adb351160087894f4ee6d9a3812649e110a24aab64e1aae8621830d7369c067",
    "django__django-15037": "427c7299f1d3788a161245ffdc057dde90d0b8d6afb44242d0db0719f9a4bb35",
    "django__django-15572": "eb10359c19d09450c0311d83384b204b347fe8e064568ed9d81b08c6f22f8a47",
    "django__django-16333": "d55ba2e72ae09836be920509c0c8dc6d536e70e580efadb2426a01c00ea3622b",
    "django__django-7530": "b03a889f17c8af2a522bc4e0ed1d845b8d71a9263de97b62a7f2d66e149b9aa1",
    "matplotlib__matplotlib-25311": "af63aafd5c73a1233b35c650e0503fd79b39b279833fa7f772897d0b915962d6",
    "pydata__xarray-3677": "c300a8e64afd4c2fc151589eca696cd9031c3009e1c87e5402c37b999409b796",
    "pylint-dev__pylint-7080": "5bd8bd5c5e3141a534a5230166e7fc610e9b4ca3a29852a8bf60a06b97be4684",
    "scikit-learn__scikit-learn-11578": "ace3e5f7fa76067fe2155e7cf1e693a8b048a72778ece245973f9391c46df29b",
    "scikit-learn__scikit-learn-26194": "76636d879e9d9ed557e9fb6126f0f635d304791d630a5f3637a15e86ca6dd321",
    "sphinx-doc__sphinx-8459": "39d7666ec6e698c0d59b0ad0b8ec0bf8039666462936267e392a28bcc099687f",
    "sympy__sympy-12489": "97cb240cd973bc4682fd75856e759a44cd9a4ab0b81db1c055494f491ea6aa2d",
    "sympy__sympy-16450": "25cae6ac97b70d310b73572aaadb7f02f75b400eb0932152f4b1361c251fc819",
    "sympy__sympy-21379": "8a9a66fc2f3ef347b617ef14ce7a97adcbb2843d15970b88ada0b75ff41b1e77",
}


def git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def choose(names: list[str]) -> list[str]:
    ids = sorted(n[len(PREFIX):].split("/")[0] for n in names
                 if n.startswith(PREFIX) and n.endswith(".traj.json") and n.count("/") == PREFIX.count("/") + 1)
    ids = [i for i in ids if i not in DEV_IDS]
    return ids[::STEP][:COUNT]


def extract(repo: str, commit: str, pinned: dict[str, str], default_out: Path,
            choose_in: Callable[[Path], list[str]], source: Callable[[str], str],
            dest: Callable[[str], str], at_commit: bool = True) -> int:
    """Clone (or use ``--git-dir``), check that the rule ``choose_in`` still picks exactly the
    pinned names, and write each one's bytes after checking its pinned SHA-256. ``source`` gives
    a path at ``commit``, or (``at_commit=False``) a whole ``<commit>:<path>`` of its own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--git-dir")
    ap.add_argument("--out", default=str(default_out))
    args = ap.parse_args()
    out = Path(args.out).expanduser()
    with tempfile.TemporaryDirectory() as tmp:
        git_dir = Path(args.git_dir) if args.git_dir else Path(tmp) / "repo.git"
        if not args.git_dir:
            subprocess.run(["git", "clone", "--bare", "--filter=blob:none", repo, str(git_dir)], check=True)
        chosen = choose_in(git_dir)
        if list(pinned) != chosen:
            sys.exit(f"the rule picked {chosen}, not the pinned list")
        for name in chosen:
            data = git(git_dir, "show", f"{commit}:{source(name)}" if at_commit else source(name))
            digest = hashlib.sha256(data).hexdigest()
            if pinned[name] != digest:
                sys.exit(f"{name}: sha256 {digest}, pinned {pinned[name]}")
            (out / dest(name)).parent.mkdir(parents=True, exist_ok=True)
            (out / dest(name)).write_bytes(data)
            print(f"{digest}  {dest(name)}  {len(data)} bytes")
    print(f"{len(chosen)} files in {out} (commit {commit})")
    return 0


def main() -> int:
    return extract(
        REPO, COMMIT, PINNED, DEFAULT_OUT,
        lambda d: choose(git(d, "ls-tree", "-r", "--name-only", COMMIT, PREFIX).decode().splitlines()),
        lambda i: f"{PREFIX}{i}/{i}.traj.json", lambda i: f"{i}.traj.json",
    )


if __name__ == "__main__":
    sys.exit(main())
