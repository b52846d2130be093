#!/usr/bin/env python3
"""Differential check of the decoders against llvm-mc's disassembler.

Development aid only (the cargo tests embed their encodings and do not need
llvm-mc). Generates random words in the load/store encoding spaces, decodes
them with `examples/dump.rs` and with `llvm-mc -disassemble`, and compares:

* every word we accept must disassemble (after normalisation) to exactly our
  rendering;
* every word we reject that LLVM disassembles to a supported mnemonic must be
  rejected for one of the deliberate UNPREDICTABLE/PC-related reasons.

Usage: tools/diff_llvm.py [count [seed] | sweep]
"""
import collections
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CRATE = os.path.dirname(HERE)

A64_NOP = 0xD503201F
A32_NOP = 0xE320F000

A64_SUPPORTED = set(
    """ldr str ldrb strb ldrh strh ldrsb ldrsh ldrsw ldp stp ldpsw ldnp stnp
    ldar ldarb ldarh stlr stlrb stlrh ldapr ldaprb ldaprh""".split()
)
A32_SUPPORTED = set("ldr str ldrb strb ldrh strh ldrsb ldrsh ldrd strd".split())
A32_CONDS = "eq ne hs lo mi pl vs vc hi ls ge lt gt le".split()

# Rejections that LLVM decodes anyway (it does not model UNPREDICTABLE).
DELIBERATE = {
    "PairSameRegister",
    "WritebackOverlap",
    "ReservedFieldValue",
    "PairOddRegister",
    "PairIntoPc",
    "OffsetOverlap",
    "LoadIntoPc",
    "StoreOfPc",
    "PcOffsetRegister",
    "PcRelative",
    "Unprivileged",
}


def a64_words(n, rng):
    out = []
    for _ in range(n):
        w = rng.getrandbits(32)
        w |= 1 << 27
        w &= ~(1 << 25)
        # Bias towards the classes we support.
        r = rng.random()
        if r < 0.35:
            w |= 0b11 << 28
        elif r < 0.6:
            w = (w & ~(0b11 << 28)) | (0b10 << 28)
        if rng.random() < 0.15:  # same registers, to hit overlap rules
            reg = rng.getrandbits(5)
            w = (w & ~0x3FF) | reg | (reg << 5)
        out.append(w)
    return out


def a32_words(n, rng):
    out = []
    for _ in range(n):
        w = rng.getrandbits(32)
        r = rng.random()
        if r < 0.4:
            w = (w & ~(0b111 << 25)) | (0b010 << 25)
        elif r < 0.65:
            w = (w & ~(0b111 << 25)) | (0b011 << 25)
            w &= ~(1 << 4)
        elif r < 0.95:
            w = (w & ~(0b111 << 25)) | (1 << 7) | (1 << 4)
        if rng.random() < 0.9 and (w >> 28) == 0xF:
            w = (w & 0x0FFFFFFF) | (0xE << 28)
        out.append(w)
    return out


def a64_sweep():
    """Every value of bits 31:21 and 15:10 in the load/store space, with
    Rt=1, Rn=2, Rm/Rs=3 (and a second pass with Rt2/Rs = 31)."""
    out = []
    for hi in range(1 << 11):
        for mid in range(1 << 6):
            for rm in (3, 31):
                w = (hi << 21) | (rm << 16) | (mid << 10) | (2 << 5) | 1
                if (w >> 27) & 1 and not (w >> 25) & 1:
                    out.append(w)
    return out


def a32_sweep():
    """Every value of bits 31:20 (cond 0xE and 0xF) and 7:4, with Rn=2,
    Rt=4, Rm=3 and bits 11:8 = 0 or 5."""
    out = []
    for cond in (0xE, 0xF, 0x0):
        for op in range(1 << 8):
            for low in range(1 << 4):
                for mid in (0, 5):
                    out.append((cond << 28) | (op << 20) | (2 << 16) | (4 << 12)
                               | (mid << 8) | (low << 4) | 3)
    return out


def dump(isa, words):
    inp = "".join(f"{isa} {w:08x}\n" for w in words)
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", os.path.join(os.path.dirname(CRATE), "target-mmio-trap"))
    res = subprocess.run(
        ["cargo", "run", "-q", "--example", "dump"],
        env=env,
        input=inp,
        capture_output=True,
        text=True,
        cwd=CRATE,
        check=True,
    )
    out = {}
    for line in res.stdout.splitlines():
        word, status, text = line.split("\t")
        out[int(word, 16)] = (status, text)
    return out


def llvm(isa, words):
    nop = A64_NOP if isa == "a64" else A32_NOP
    lines = []
    for w in words:
        for x in (nop, w):
            b = x.to_bytes(4, "little")
            lines.append(" ".join(f"0x{c:02x}" for c in b))
    lines.append(" ".join(f"0x{c:02x}" for c in nop.to_bytes(4, "little")))
    if isa == "a64":
        cmd = ["llvm-mc", "-disassemble", "-triple=aarch64",
               "-mattr=+v8.7a,+mte,+ls64,+mops,+rcpc,+lse,+lor,+pauth"]
    else:
        cmd = ["llvm-mc", "-disassemble", "-triple=armv7r-none-eabi", "-mcpu=cortex-r5"]
    res = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True)
    insns = []
    for line in res.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith("."):
            continue
        insns.append(re.sub(r"\s+", " ", line.replace("\t", " ")))
    # Split on nops: [nop, x?, nop, x?, ..., nop]
    out = []
    cur = None
    for ins in insns:
        if ins == "nop":
            if cur is not None:
                out.append(cur)
            cur = ""
        else:
            cur = ins if not cur else cur + " ; " + ins
    assert len(out) == len(words), (len(out), len(words))
    return dict(zip(words, out))


def norm_a64(text):
    text = text.lower().split("//")[0].strip()
    text = re.sub(r"\s+", " ", text)
    m = text.split(" ", 1)
    mn = m[0]
    mn = re.sub(r"^ldur", "ldr", mn)
    mn = re.sub(r"^stur", "str", mn)
    rest = m[1] if len(m) > 1 else ""
    rest = rest.replace(", lsl #0]", "]")
    rest = re.sub(r"(uxtw|sxtw|sxtx) #0\]", r"\1]", rest)
    return (mn + " " + rest).strip()


def norm_a32(text):
    text = text.lower().split("@")[0].strip()
    return re.sub(r"\s+", " ", text)


def base_mnemonic(isa, text):
    mn = text.split(" ", 1)[0]
    if isa == "a32":
        for c in A32_CONDS:
            if mn.endswith(c) and mn[: -len(c)] in A32_SUPPORTED:
                return mn[: -len(c)]
    return mn


def main():
    sweep = len(sys.argv) > 1 and sys.argv[1] == "sweep"
    count = int(sys.argv[1]) if len(sys.argv) > 1 and not sweep else 20000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    failures = 0
    for isa, gen, sweeper, norm, supported in (
        ("a64", a64_words, a64_sweep, norm_a64, A64_SUPPORTED),
        ("a32", a32_words, a32_sweep, norm_a32, A32_SUPPORTED),
    ):
        words = sorted(set(sweeper() if sweep else gen(count, rng)))
        ours = dump(isa, words)
        theirs = llvm(isa, words)
        stats = collections.Counter()
        for w in words:
            status, text = ours[w]
            ll = norm(theirs[w]) if theirs[w] else ""
            if status == "ok":
                stats["accepted"] += 1
                if norm(text) != ll:
                    failures += 1
                    print(f"{isa} {w:08x}: MISMATCH ours={text!r} llvm={theirs[w]!r}")
            else:
                stats["rejected:" + text] += 1
                if ll and base_mnemonic(isa, ll) in supported and "[" in ll:
                    if text not in DELIBERATE:
                        failures += 1
                        print(f"{isa} {w:08x}: REJECTED ({text}) but llvm={theirs[w]!r}")
                    else:
                        stats["deliberate:" + text] += 1
        print(isa, len(words), "words:", dict(sorted(stats.items())))
    print("failures:", failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
