#!/usr/bin/env python3
"""Mutated scenario files for attacking `reapcheck check` and `run` (issue 24).

    ci/mutate-scenarios.py OUT N [SEED]

writes N files made from scenarios/**/*.yaml, in folders of 100
(OUT/batch-0000/m000000.yaml, ...), each with one to three mutations:
random byte edits (NUL and invalid UTF-8 among them), duplicated and deleted
lines, huge numbers, long strings (at and around the targets' limits: 255,
2,704, 8,192 bytes), NUL escapes, unknown zones, and rows and steps near and
above the scenario limits. Same SEED, same files. Play them with
`reapcheck check --offline --scenarios OUT/batch-0000`, then `reapcheck run
--db sqlite --coverage-min 0` on the files check accepted.
"""

import pathlib
import random
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
NUMBERS = ["0", "-1", "2147483647", "2147483648", "9223372036854775807", "-9223372036854775808",
           "99999999999999999999", "1e400", "284012524801", "10000", "10001"]
LENGTHS = [254, 255, 256, 300, 2704, 2705, 8192, 8193, 100_000]
ZONES = ["America/New_York", "Mars/Olympus_Mons", "+13:30", "+05:75", "utc", "Etc/GMT+5", "A" * 300]


def mutate(text: str, rng: random.Random) -> bytes:
    lines = text.split("\n")
    kind = rng.randrange(11)
    if kind == 0:  # random byte edits
        data = bytearray(text.encode("utf-8", "surrogateescape"))
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data) + 1)
            op = rng.randrange(3)
            byte = rng.choice([0, 0xFF, ord(":"), ord("{"), ord("-"), ord(" "), ord("\n"), rng.randrange(256)])
            if op == 0 and i < len(data):
                data[i] = byte
            elif op == 1:
                data.insert(i, byte)
            elif i < len(data):
                del data[i]
        return bytes(data)
    if kind == 1:  # duplicate lines
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(lines))
            lines[i:i] = [lines[i]] * rng.choice([1, 2, 50])
    elif kind == 2:  # delete lines
        for _ in range(rng.randint(1, 3)):
            if len(lines) > 1:
                del lines[rng.randrange(len(lines))]
    elif kind == 3:  # huge numbers
        numbers = [m for m in re.finditer(r"(?<![\w.])-?\d+(?![\w.:])", text)]
        if numbers:
            m = rng.choice(numbers)
            text = text[: m.start()] + rng.choice(NUMBERS) + text[m.end():]
        return text.encode("utf-8", "surrogateescape")
    elif kind == 4:  # long ids, classes, queues, keys
        names = [m for m in re.finditer(r"\b(id|class|queue|concurrency_key|name|owner|as): ([\w./-]+)", text)]
        if names:
            m = rng.choice(names)
            long = rng.choice("kx") * rng.choice(LENGTHS)
            text = text[: m.start(2)] + long + text[m.end(2):]
        return text.encode("utf-8", "surrogateescape")
    elif kind == 5:  # a concurrency key whose lease name passes 255 bytes
        text = re.sub(r"(\bclass: \w+)", lambda m: m.group(1) + ", concurrency_key: " + "c" * rng.choice(LENGTHS), text, count=1)
        return text.encode("utf-8", "surrogateescape")
    elif kind == 6:  # NUL in a name
        text = re.sub(r"\bid: ([\w-]+)", lambda m: 'id: "' + m.group(1) + '\\0"', text, count=1)
        return text.encode("utf-8", "surrogateescape")
    elif kind == 7:  # zones
        zone = rng.choice(ZONES)
        text = re.sub(r"^session_time_zone: .*$", "", text, flags=re.M)
        text = f'session_time_zone: "{zone}"\n' + text
        return text.encode("utf-8", "surrogateescape")
    elif kind == 8:  # many rows
        count = rng.choice([999, 5000, 9999, 10000, 10001, 100000])
        text = re.sub(r"^jobs:\n", f"jobs:\n  - {{ id: zz-, count: {count}, class: __C, status: processing, attempts: 1, claimed: -2h }}\n", text, count=1, flags=re.M)
        text = re.sub(r"^classes:\n", "classes:\n  __C: { timeout: 60 }\n", text, count=1, flags=re.M)
        return text.encode("utf-8", "surrogateescape")
    elif kind == 9:  # many steps
        n = rng.choice([100, 1999, 2000, 2001, 20000])
        step = rng.choice(["reap", "scan", "apply", "advance: 1s"])
        text = re.sub(r"^steps:\n", "steps:\n" + f"  - {step}\n" * n, text, count=1, flags=re.M)
        text = re.sub(r"^expect:(.|\n)*", "", text, flags=re.M)
        return text.encode("utf-8", "surrogateescape")
    else:  # rows and steps together, near the checkpoint limit
        rows, steps = rng.choice([(10000, 50), (10000, 60), (2000, 300), (500, 2000), (10000, 2000)])
        return (f"description: heavy\nclasses: {{ C: {{ timeout: 60 }} }}\njobs:\n"
                f"  - {{ id: j-, count: {rows}, class: C, status: processing, attempts: 1, claimed: -2h }}\n"
                "steps:\n" + "  - reap\n" * steps).encode("utf-8", "surrogateescape")
    return "\n".join(lines).encode("utf-8", "surrogateescape")


def main() -> None:
    out, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 24)
    sources = sorted((ROOT / "scenarios").rglob("*.yaml"))
    texts = [p.read_text() for p in sources]
    for i in range(n):
        data = texts[rng.randrange(len(texts))]
        for _ in range(rng.randint(1, 3)):
            data = mutate(data.decode(errors="surrogateescape") if isinstance(data, bytes) else data, rng)
        folder = out / f"batch-{i // 100:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i:06d}.yaml").write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))


if __name__ == "__main__":
    main()
