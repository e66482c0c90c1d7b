"""docs/architecture.md's rooms list against the tree (issue 30): every
source file of a room the list names is named in that room's entry, and
every name an entry lists as a room's file exists. The list is the one map a
new reader has of the code; this keeps it true as rooms are added."""

import os
import re
import unittest

SOURCE = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EXTENSIONS = (".bpf.h", ".bpf.c", ".cpp", ".h", ".c", ".py")
NAME_COLUMN = 20  # an entry's file names start in this column


def stem(name):
    for ext in EXTENSIONS:
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def rooms_list():
    """{folder: the text of its entry} from the code block under "## Rooms"."""
    with open(os.path.join(SOURCE, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n## Rooms\n", 1)[1]
    block = section.split("```\n", 2)[1]
    rooms, folder = {}, None
    for line in block.splitlines():
        m = re.match(r"^(\S+/)\s", line + " ")
        if m:
            folder = m.group(1)
            rooms[folder] = [line]
        elif folder:
            rooms[folder].append(line)
    return rooms


def listed_names(lines):
    """The file names an entry lists in its name column ("load, adopt")."""
    names = []
    for line in lines[1:]:
        if len(line) > NAME_COLUMN and line[:NAME_COLUMN].strip() == "" and line[NAME_COLUMN] != " ":
            # "load, adopt      a fresh ...": names while each ends in a comma
            for token in line[NAME_COLUMN:].split():
                names.append(token.rstrip(","))
                if not token.endswith(","):
                    break
    return names


def sources(folder):
    path = os.path.join(SOURCE, folder)
    return sorted({stem(f) for f in os.listdir(path) if f.endswith(EXTENSIONS)})


def mentioned(text, name):
    """Is the file `name` (a stem) named in `text`: as itself, with an
    extension, or by a pattern of the text's (cmd_*.cpp)?"""
    if re.search(r"(?<![\w*])" + re.escape(name) + r"(\.bpf\.h|\.bpf\.c|\.cpp|\.h|\.c|\.py)?(?![\w*])", text):
        return True
    return any(re.fullmatch(p.replace("*", r"\w+"), name)
               for p in re.findall(r"(\w+\*)\.(?:cpp|h|c)", text))


class Rooms(unittest.TestCase):
    def test_every_room_file_is_named_in_its_entry(self):
        missing = []
        for folder, lines in rooms_list().items():
            if not os.path.isdir(os.path.join(SOURCE, folder)):
                continue
            text = "\n".join(lines)
            missing += [folder + f for f in sources(folder) if not mentioned(text, f)]
        self.assertEqual(missing, [], "files of a room docs/architecture.md's rooms list does not name")

    def test_every_listed_room_and_file_exists(self):
        absent = []
        for folder, lines in rooms_list().items():
            if not os.path.isdir(os.path.join(SOURCE, folder)):
                absent.append(folder)
                continue
            have = sources(folder)
            absent += [folder + n for n in listed_names(lines) if stem(n) not in have]
        self.assertEqual(absent, [], "names docs/architecture.md's rooms list gives that are not in the tree")

    def test_the_rooms_are_the_libraries_folders(self):
        listed = set(rooms_list())
        lib = os.path.join(SOURCE, "ctl", "lib")
        tree = {f"ctl/lib/{d}/" for d in os.listdir(lib) if os.path.isdir(os.path.join(lib, d))}
        tree |= {"ctl/sluiced/", "ctl/sluicectl/", "bpf/"}
        self.assertEqual(sorted(tree - listed), [], "folders with no entry in the rooms list")


if __name__ == "__main__":
    unittest.main()
