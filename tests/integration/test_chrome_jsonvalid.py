"""test_chrome_jsonvalid.py - tp_json_valid, which decides whether the trace writer embeds raw
JSON (shapes, the configuration) or keeps it as a string, against Python's json module on
many mutations of real-looking JSON texts. The one intended difference: a raw DEL byte inside
a string is refused (legal JSON, but Perfetto's tokenizer rejects it)."""
import json
import os
import random
import subprocess

TOOL = os.path.join(os.environ.get("TPROF_BUILD_DIR", "build"), "tests", "tp_json_check")

SEEDS = [b'{"a": [1, 2.5e-3, -0, true, false, null, "x\\u00e9\\n"], "b": {}}',
         b"[[64, 784], [784, 256], []]", b'"caf\xc3\xa9 \xf0\x9f\x98\x80"', b"123",
         b"-1.0E+2", b'{"k": {"k": {"k": []}}}', b" [ ] ", b'"\\ud83d\\ude00 \\/ \\b \\f"',
         b'{"enabled": true, "epochs": [1, 5, 10], "run_id": "x-1"}']
ALPHABET = b'{}[]:,"\\ -+.eE0123456789truefalsn\x01\x1f\x7f\xc3\xa9\xff\xed\xa0\t\nuU/'


def python_valid(text):
    if b"\x7f" in text:
        return False
    try:
        def refuse(name):
            raise ValueError(name)
        json.loads(text.decode("utf-8"), parse_constant=refuse)
        return True
    except (ValueError, UnicodeDecodeError):
        return False


def mutations(seed, count):
    rnd = random.Random(seed)
    out = []
    while len(out) < count:
        s = bytearray(rnd.choice(SEEDS))
        for _ in range(rnd.randrange(1, 4)):
            pos = rnd.randrange(len(s) + 1)
            op = rnd.randrange(3)
            if op == 0 and s:
                del s[min(pos, len(s) - 1)]
            elif op == 1:
                s[pos:pos] = bytes([rnd.choice(ALPHABET)])
            elif s:
                s[min(pos, len(s) - 1)] = rnd.choice(ALPHABET)
        out.append(bytes(s))
    return out


def test_agrees_with_python_json():
    cases = SEEDS + mutations(1, 60000)
    got = subprocess.run([TOOL], input=b"\x00".join(cases), capture_output=True, check=True,
                         timeout=300).stdout.decode()
    assert len(got) == len(cases)
    want = [python_valid(c) for c in cases]
    assert sum(want) > 5000, "the mutations should keep many texts valid"
    # "!": tp_json_valid and tp_json_valid_z (the NUL-terminated variant) disagree
    wrong = [(c, g) for c, g, w in zip(cases, got, want) if g != ("1" if w else "0")]
    assert not wrong, wrong[:10]
