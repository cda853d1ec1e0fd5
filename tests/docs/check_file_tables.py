#!/usr/bin/env python3
"""Every file table of a README lists exactly the files of the README's folder.

    check_file_tables.py <checkout>     check every README.md under <checkout>
    check_file_tables.py --self-test    show that a missing and an extra file are both reported

A file table is a Markdown table with a column headed "file", "files", "document" or
"campaign"; the names in that column are its code spans (`decode.cu`, `launch_sol.hpp`,
`sol.cu`) and its link targets ([text](name.md)). The union of a README's file tables must be
the regular files of its folder (not recursive; the README itself may be listed or not).
READMEs without a file table are not checked. Exit status 1, with one line per difference
naming the README, the file and what is wrong, when a table and its folder disagree.
"""
import os
import re
import sys
import tempfile

FILE_COLUMNS = {"file", "files", "document", "campaign"}
SKIPPED_DIRS = {"build", "node_modules", "__pycache__"}


def cells(row):
    """The cells of a table row; a '|' inside a code span does not split."""
    out, cur, code = [], [], False
    for ch in row.strip().strip("|"):
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out


def tables(text):
    """(header cells, body rows as cell lists) of each Markdown table in text."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = cells(lines[i])
            body = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                body.append(cells(lines[i]))
                i += 1
            yield header, body
        else:
            i += 1


def names_in(cell):
    """File names a cell gives: its code spans and its relative link targets."""
    names = set(re.findall(r"`([^`\s]+)`", cell))
    for target in re.findall(r"\]\(([^)\s]+)\)", cell):
        target = target.split("#")[0]
        if target and "://" not in target:
            names.add(target)
    return names


def listed_files(readme_text):
    """The names of the README's file tables, or None when it has none."""
    found = None
    for header, body in tables(readme_text):
        keys = [h.strip("*` ").lower() for h in header]
        cols = [k for k, h in enumerate(keys) if h in FILE_COLUMNS]
        if not cols:
            continue
        found = found or set()
        for row in body:
            for k in cols:
                if k < len(row):
                    found |= names_in(row[k])
    return found


def check_readme(readme, display):
    """Differences between one README's file tables and its folder, as messages."""
    with open(readme, encoding="utf-8") as f:
        listed = listed_files(f.read())
    if listed is None:
        return []
    folder = os.path.dirname(readme)
    present = {n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n))}
    present.discard("README.md")
    listed.discard("README.md")
    where = os.path.dirname(display) or "."
    errors = []
    for name in sorted(present - listed):
        errors.append(f"{display}: file table lacks {name}, which is in {where}/ (add a row for it)")
    for name in sorted(listed - present):
        errors.append(f"{display}: file table lists {name}, which {where}/ does not have (remove or rename the row)")
    return errors


def readmes(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                         and not (folder == root and d.startswith("build")))
        if "README.md" in files:
            yield os.path.join(folder, "README.md")


def check_tree(root):
    errors, checked = [], 0
    for readme in readmes(root):
        display = os.path.relpath(readme, root)
        with open(readme, encoding="utf-8") as f:
            if listed_files(f.read()) is not None:
                checked += 1
        errors += check_readme(readme, display)
    return errors, checked


def self_test():
    """The checker must report a file the table lacks and a row without a file, and pass a match."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "arch", "x")
        os.makedirs(d)
        for n in ("a.hpp", "b.cu", "c.cuh"):
            open(os.path.join(d, n), "w").close()
        readme = os.path.join(d, "README.md")

        def write(rows):
            with open(readme, "w", encoding="utf-8") as f:
                f.write("# x\n\n| file | job |\n|---|---|\n" + "".join(f"| {r} | job |\n" for r in rows))
                f.write("\n| isa.hpp | not a file table |\n|---|---|\n| `zzz.hpp` | ignored |\n")

        write(["`a.hpp`", "`b.cu`, `c.cuh`"])
        errors, checked = check_tree(tmp)
        assert checked == 1 and errors == [], errors
        write(["`a.hpp`", "`b.cu`", "`gone.cuh` (a | pipe in `x|y` code)"])
        errors, _ = check_tree(tmp)
        want = ["arch/x/README.md: file table lacks c.cuh, which is in arch/x/ (add a row for it)",
                "arch/x/README.md: file table lists gone.cuh, which arch/x/ does not have (remove or rename the row)"]
        assert errors == want, errors
        with open(readme, "w", encoding="utf-8") as f:
            f.write("| date | campaign |\n|---|---|\n| 1 | [a](a.hpp) |\n| 2 | [b](b.cu#x) |\n")
        errors, _ = check_tree(tmp)
        assert errors == ["arch/x/README.md: file table lacks c.cuh, which is in arch/x/ (add a row for it)"], errors
    print("self-test passed: a missing file, an extra row and link targets are reported")
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    errors, checked = check_tree(root)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} difference(s) between file tables and folders", file=sys.stderr)
        return 1
    print(f"{checked} README(s) with file tables, each matching its folder")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
