#!/usr/bin/env python3
"""The shipped command data compiled into cc-classify (knowledge.hpp).

embed_data.py OUT.cpp FILE.json...

Writes OUT.cpp: each file's text as a raw string literal, where each entry of
its "commands" array starts and ends in that text, and every command name
sorted and in a hash table, so that cc-classify reads no file at start and parses only the
entries a command line names. A file that is not JSON, an entry without
names, or a name listed twice (in one file or across files) fails the build
naming the file; every other check is the loader's own (Knowledge::add),
which a unit test runs over every shipped file.
"""
import json
import os
import sys


def fail(path, message):
    sys.exit(f"embed_data.py: {path}: {message}")


class Spans:
    """Byte offsets of each element of the top-level "commands" array."""

    def __init__(self, text, path):
        self.s, self.k, self.path = text, 0, path

    def ws(self):
        while self.k < len(self.s) and self.s[self.k] in " \t\r\n":
            self.k += 1

    def value(self):
        self.ws()
        c = self.s[self.k]
        if c == "{":
            self.k += 1
            self.ws()
            if self.s[self.k] == "}":
                self.k += 1
                return
            while True:
                self.ws()
                self.string()
                self.ws()
                self.k += 1  # ':'
                self.value()
                self.ws()
                c = self.s[self.k]
                self.k += 1
                if c == "}":
                    return
        elif c == "[":
            self.k += 1
            self.ws()
            if self.s[self.k] == "]":
                self.k += 1
                return
            while True:
                self.value()
                self.ws()
                c = self.s[self.k]
                self.k += 1
                if c == "]":
                    return
        elif c == '"':
            self.string()
        else:
            while self.k < len(self.s) and self.s[self.k] not in ",}] \t\r\n":
                self.k += 1

    def string(self):
        start = self.k
        self.k += 1
        while self.s[self.k] != '"':
            self.k += 2 if self.s[self.k] == "\\" else 1
        self.k += 1
        return json.loads(self.s[start:self.k])

    def commands(self):
        """[(begin, end)] of each entry, in bytes of the UTF-8 text."""
        self.ws()
        self.k += 1  # '{'
        out = []
        while True:
            self.ws()
            key = self.string()
            self.ws()
            self.k += 1  # ':'
            self.ws()
            if key == "commands":
                self.k += 1  # '['
                self.ws()
                while self.s[self.k] != "]":
                    self.ws()
                    begin = self.k
                    self.value()
                    out.append((begin, self.k))
                    self.ws()
                    if self.s[self.k] == ",":
                        self.k += 1
                    self.ws()
                self.k += 1
            else:
                self.value()
            self.ws()
            c = self.s[self.k]
            self.k += 1
            if c == "}":
                return out


def main():
    out_path, paths = sys.argv[1], sorted(sys.argv[2:], key=os.path.basename)
    files, entries, names, seen, prefixes = [], [], [], {}, []
    for path in paths:
        raw = open(path, "rb").read()
        try:
            text = raw.decode("utf-8")
            doc = json.loads(text)
        except ValueError as e:
            fail(path, f"not JSON: {e}")
        if ")cc_json\"" in text:
            fail(path, "holds the raw string delimiter )cc_json\"")
        base = os.path.basename(path)
        spans = Spans(text, path).commands()
        commands = doc.get("commands", [])
        if len(spans) != len(commands):
            fail(path, "could not find every entry of \"commands\"")
        for index, ((begin, end), entry) in enumerate(zip(spans, commands)):
            if not entry.get("names"):
                fail(path, f"commands[{index}].names is required")
            b = len(text[:begin].encode("utf-8"))
            e = len(text[:end].encode("utf-8"))
            for n in entry["names"]:
                if n in seen:
                    fail(path, f"commands[{index}].names: '{n}' is already listed in {seen[n]}")
                seen[n] = base
                names.append((n, len(entries)))
            for p in entry.get("prefixes", []):
                for q, _, where in prefixes:
                    if p.startswith(q) or q.startswith(p):
                        fail(path, f"commands[{index}].prefixes: '{p}' overlaps the prefix '{q}' of {where}")
                prefixes.append((p, len(entries), base))
            entries.append((len(files), index, b, e))
        files.append((base, text))
    names.sort(key=lambda p: p[0].encode("utf-8"))

    def lit(s):
        return json.dumps(s, ensure_ascii=False)

    o = ["// Generated by lib/cc/classify/embed_data.py from share/cc/classify/builtin/*.json: do not edit.",
         '#include "cc/classify/knowledge.hpp"', "", "namespace cc::classify::builtin {", "",
         "using namespace std::string_view_literals;", "", "const File files[] = {"]
    for base, text in files:
        o.append(f'    {{{lit(base)}sv, R"cc_json({text})cc_json"sv}},')
    o += ["};", f"const std::size_t file_count = {len(files)};", "", "const Entry entries[] = {"]
    for f, index, b, e in entries:
        o.append(f"    {{{f}, {index}, {b}, {e}}},")
    o += ["};", f"const std::size_t entry_count = {len(entries)};", "", "const Name names[] = {"]
    for n, entry in names:
        o.append(f"    {{{lit(n)}sv, {entry}}},")
    # The names' open-addressing table, as NameTable lays one out at run time
    # (FNV-1a, linear probing, a power of two at least twice the names): a
    # look-up is a hash and a probe or two, with nothing built at start.
    size = 16
    while size < 2 * len(names):
        size *= 2
    slots = [0] * size
    for k, (n, _) in enumerate(names):
        h = 1469598103934665603
        for c in n.encode("utf-8"):
            h = ((h ^ c) * 1099511628211) % (1 << 64)
        i = h & (size - 1)
        while slots[i]:
            i = (i + 1) & (size - 1)
        slots[i] = k + 1
    o += ["};", f"const std::size_t name_count = {len(names)};", "", "const std::uint32_t name_slots[] = {"]
    for i in range(0, size, 16):
        o.append("    " + " ".join(f"{v}," for v in slots[i:i + 16]))
    o += ["};", f"const std::size_t name_slot_count = {size};", "", "const Name prefixes[] = {"]
    for p, entry, _ in prefixes:
        o.append(f"    {{{lit(p)}sv, {entry}}},")
    if not prefixes:
        o.append('    {""sv, 0},  // none (an array has at least one element)')
    o += ["};", f"const std::size_t prefix_count = {len(prefixes)};", "", "}  // namespace cc::classify::builtin", ""]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(o))


if __name__ == "__main__":
    main()
