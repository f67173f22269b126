"""``contextfork packages list|show|clean``: see and prune the packages of a repository.

Packages are immutable, so the only mutation here is removal, and it is conservative: a dry run
unless asked, the newest N always kept, and a package nobody resumed yet is kept unless forced.
"""

from __future__ import annotations

import json
from pathlib import Path

from contextfork import atomic, provenance
from contextfork.envelope import Problem, Result
from contextfork.errors import UsageError
from contextfork.layout import packages_dir
from contextfork.lifecycle.notes import NOTE_KEY, parse_note
from contextfork.package import store
from contextfork.records import Record
from contextfork.resume import state

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's path)
if TYPE_CHECKING:
    from typing import Any


class PackageInfo(Record):
    __match_args__ = ("package_id", "path", "created_at", "trigger", "head", "branch", "consumed",
                      "consumed_by", "size", "readable", "provenance", "offered")  # fmt: skip

    def __init__(
        self, package_id: str, path: str, created_at: str | None, trigger: str | None,
        head: str | None, branch: str | None, consumed: bool, consumed_by: str | None,
        size: int, readable: bool, provenance: str, offered: bool,
    ) -> None:  # fmt: skip
        self.package_id = package_id
        self.path = path
        self.created_at = created_at
        self.trigger = trigger
        self.head = head
        self.branch = branch
        self.consumed = consumed
        self.consumed_by = consumed_by
        self.size = size
        self.readable = readable
        # "export", "pull", "pull-unsigned", "trust", or why it is not offered
        self.provenance = provenance
        self.offered = offered


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _text(value: Any) -> str | None:
    """A metadata field as text: a damaged or hostile file must not break a listing."""
    return value if isinstance(value, str) else None


def _size(manifest: Any, path: Path) -> tuple[int, bool]:
    """Bytes the manifest lists (plus itself), and whether its file list is well formed."""
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, list):
        return 0, False
    sizes = [e.get("size") if isinstance(e, dict) else None for e in files]
    ok = [s for s in sizes if isinstance(s, int) and not isinstance(s, bool) and s >= 0]
    try:
        own = path.stat().st_size
    except OSError:
        own = 0
    return sum(ok) + own, len(ok) == len(sizes)


def _origin(root: Path, ref: store.PackageRef) -> tuple[str, bool]:
    st = provenance.standing(root, ref.package_id, ref.path)
    if st.record is None or not st.offered:
        return st.code, False
    origin = str(st.record.get("origin"))
    if origin == "pull" and provenance.is_foreign(st.record):
        origin = "pull-unsigned"
    return origin, True


def info(ref: store.PackageRef, root: Path | None = None) -> PackageInfo:
    """Facts for one package from its own files; a damaged package is listed, not hidden."""
    meta = _read_json(ref.path / "session_metadata.json")
    manifest = _read_json(ref.path / "manifest.json")
    size, well_formed = _size(manifest, ref.path / "manifest.json")
    st = state.load(ref.path, ref.package_id)
    last = st.consumptions[-1] if st.consumptions else None
    meta = meta if isinstance(meta, dict) else {}
    origin, offered = _origin(root, ref) if root is not None else ("unknown", False)
    return PackageInfo(
        package_id=ref.package_id,
        path=str(ref.path),
        created_at=_text(meta.get("created_at")),
        trigger=_text(meta.get("trigger")),
        head=_text(meta.get("head")),
        branch=_text(meta.get("branch")),
        consumed=last is not None,
        consumed_by=(last.session_id or "(unknown session)") if last else None,
        size=size,
        readable=bool(meta) and well_formed,
        provenance=origin,
        offered=offered,
    )


def list_packages(root: Path) -> Result:
    rows = [info(r, root) for r in store.list_packages(root)]
    lines = [f"{len(rows)} package(s) in {packages_dir(root)}"]
    for r in rows:  # fits 80 columns: the id carries the creation time (JSON has created_at)
        head = (r.head or "(unborn)")[:12]
        used = "consumed" if r.consumed else "unconsumed"
        lines.append(
            f"  {r.package_id}  {r.trigger or '?':11} {head:12}  {r.size:>9} B  {used}"
            f"{'' if r.readable else '  (DAMAGED)'}"
        )
        if r.consumed:
            lines.append(f"    consumed by {r.consumed_by}")
        if not r.offered:
            lines.append(f"    NOT OFFERED to sessions ({r.provenance}): see `contextfork doctor`")
        elif r.provenance != "export":
            lines.append(f"    {r.provenance}")
    return Result("packages list", data={"packages": [r.as_dict() for r in rows]},
                  text="\n".join(lines))  # fmt: skip


def show(root: Path | None, spec: str | None) -> Result:
    ref = store.resolve(root, spec)
    manifest = _read_json(ref.path / "manifest.json")
    handoff = _read_json(ref.path / "handoff.json")
    summary_file = ref.path / "handoff_summary.md"
    summary = summary_file.read_text(encoding="utf-8") if summary_file.is_file() else ""
    row = info(ref, root)
    text = "\n".join(
        [
            f"Package {ref.package_id} ({ref.path})",
            f"  created {row.created_at}, trigger {row.trigger}, HEAD {row.head}, "
            f"{'consumed by ' + str(row.consumed_by) if row.consumed else 'unconsumed'}",
            "",
            "manifest.json:",
            json.dumps(manifest, indent=2, ensure_ascii=False),
            "",
            summary,
        ]
    )
    data = {"info": row.as_dict(), "manifest": manifest, "handoff": handoff,
            "state": state.load(ref.path, ref.package_id).model_dump()}  # fmt: skip
    return Result("packages show", data=data, text=text)


def remove(root: Path, ref: store.PackageRef, *, later: bool = False) -> None:
    """``later``: the files go after the caller has returned (``atomic.remove_tree``)."""
    atomic.remove_tree(ref.path, later=later)
    state.forget(ref.path)
    provenance.forget_package(root, ref.package_id)


def clean(root: Path, *, keep: int, yes: bool, force: bool) -> Result:
    if keep < 0:
        raise UsageError("--keep must be 0 or more")
    refs = store.list_packages(root)
    candidates = refs[: max(0, len(refs) - keep)]
    remove_list, kept_unconsumed = [], []
    for ref in candidates:
        if not force and not state.load(ref.path, ref.package_id).consumptions:
            kept_unconsumed.append(ref.package_id)
        else:
            remove_list.append(ref)
    if yes:
        for ref in remove_list:
            remove(root, ref)
    verb = "Removed" if yes else "Would remove"
    lines = [f"{verb} {len(remove_list)} of {len(refs)} package(s) (keeping the newest {keep})."]
    lines += [f"  {'-' if yes else '?'} {r.package_id}" for r in remove_list]
    problems = []
    if kept_unconsumed:
        problems.append(
            Problem("warning", "kept_unconsumed",
                    f"{len(kept_unconsumed)} unconsumed package(s) kept; --force removes them too")
        )  # fmt: skip
    if not yes and remove_list:
        lines.append("Dry run: pass --yes to delete.")
    data = {"dry_run": not yes, "removed" if yes else "would_remove":
            [r.package_id for r in remove_list], "kept_unconsumed": kept_unconsumed,
            "keep": keep}  # fmt: skip
    return Result("packages clean", data=data, problems=problems, text="\n".join(lines))


def prune_checkpoints(root: Path, keep: int) -> list[str]:
    """Retention for automatic checkpoints: only trigger ``pre-commit`` packages are pruned.
    They leave every listing at once (renamed aside); their files are deleted by a detached
    process while the commit goes on (a hundred unlinks it used to wait on), and should that be
    killed, the next export's sweep removes the ``.trash-`` leftover, its owner being dead."""
    refs = store.list_packages(root)
    if keep <= 0 or len(refs) <= keep:  # as many packages as may be kept: no metadata to read
        return []
    checkpoints = [
        r for r in refs
        if (_read_json(r.path / "session_metadata.json") or {}).get("trigger") == "pre-commit"
    ]  # fmt: skip
    doomed = checkpoints[: max(0, len(checkpoints) - keep)]
    for ref in doomed:
        remove(root, ref, later=True)
    return [r.package_id for r in doomed]


def log(root: Path, limit: int) -> Result:
    """Recent commits with the checkpoint their note names, and whether it still verifies here."""
    from contextfork import gitstate
    from contextfork.hashing import sha256_file

    rows = []
    for e in gitstate.log_with_notes(root, limit):
        fields = parse_note(e.note) if e.note else {}
        pid = fields.get(NOTE_KEY)
        status = None
        if pid:
            manifest = packages_dir(root) / pid / "manifest.json"
            if not manifest.is_file():
                status = "missing (pruned, or not pulled here)"
            elif sha256_file(manifest)[0] == fields.get("manifest-sha256"):
                status = "present"
            else:
                status = "MANIFEST DIFFERS from the note"
        rows.append({"commit": e.sha, "date": e.date, "subject": e.subject, "checkpoint": pid,
                     "manifest_sha256": fields.get("manifest-sha256"), "status": status})
    lines = [f"{'commit':12}  {'date':25}  checkpoint"]
    for r in rows:
        cp = f"{r['checkpoint']} [{r['status']}]" if r["checkpoint"] else "-"
        lines.append(f"{str(r['commit'])[:12]}  {r['date']:25}  {cp}  {r['subject']}")
    return Result("log", data={"commits": rows}, text="\n".join(lines))
