#!/usr/bin/env python3
"""Why does the model refuse with the right tool in view?  For single-call turns (thinking on)
that the model refused with "... No offered tool does that (X is for something else)", the
prompt plus its own reasoning up to that " No" goes through our engine (`llm logits`); at that
position the call branch spreads its probability over the first tokens of the offered names,
the refusal branch puts it on one token.  Printed: how often the offered names together
outweigh " No" (a sampler that decided first would have called), and how often the best name
is the expected one.

  python3 decision_mass.py --model DIR --engine build/llm --jsonl tools_hf.jsonl [--set short|train]
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chatfmt  # noqa: E402
import eval_tools  # noqa: E402
import heldout  # noqa: E402

MARK = " No offered tool does that"


def first_ids(engine, model, texts):
    p = subprocess.run([engine, "tokenize", "--model", model], input="".join(json.dumps(t) + "\n" for t in texts),
                       capture_output=True, text=True, check=True)
    return [json.loads(line)[0] for line in p.stdout.splitlines()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--engine", required=True)
    ap.add_argument("--jsonl", required=True, help="an eval_tools.py output with the model's outputs")
    ap.add_argument("--set", default="short")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    convs = (heldout.conversations(a.n, a.seed) if a.set == "short"
             else eval_tools.train_conversations(a.n, a.seed))
    outs = {}
    for line in open(a.jsonl):
        d = json.loads(line)
        if d["id"].startswith(a.set + ".") and d["id"].endswith(".1"):
            outs[int(d["id"].split(".")[1])] = d
    rows = []
    for ci, d in sorted(outs.items()):
        if ci >= len(convs) or d["kind"] != "single" or not d["think"] or MARK not in d["output"]:
            continue
        conv = convs[ci]
        prompt, _ = chatfmt.first_prompt(conv)
        prefix = d["output"][:d["output"].index(MARK)]
        offered, want = conv["meta"]["offered"], conv["meta"]["expected"][0]["name"]
        firsts = first_ids(a.engine, a.model, [" " + n for n in offered] + [" No"])
        no_id, name_ids = firsts[-1], firsts[:-1]
        p = subprocess.run([a.engine, "logits", "--model", a.model, "--threads", "1", "--text", prompt + prefix],
                           capture_output=True, text=True, check=True)
        lg = json.loads(p.stdout)["logits"]
        m = max(lg)
        z = sum(math.exp(x - m) for x in lg)
        prob = lambda i: math.exp(lg[i] - m) / z  # noqa: E731
        names = sum(prob(i) for i in set(name_ids))
        best = max(offered, key=lambda n: lg[name_ids[offered.index(n)]])
        rows.append({"id": d["id"], "p_no": prob(no_id), "p_names": names,
                     "best_is_expected": name_ids[offered.index(best)] == name_ids[offered.index(want)],
                     "p_expected": prob(name_ids[offered.index(want)])})
    n = len(rows)
    outweigh = sum(1 for r in rows if r["p_names"] > r["p_no"])
    best_ok = sum(1 for r in rows if r["best_is_expected"])
    both = sum(1 for r in rows if r["p_names"] > r["p_no"] and r["best_is_expected"])
    print("refused single-call turns (thinking on) at the decision: %d" % n)
    if n:
        print("mean P(' No') %.3f, mean P(offered names, summed) %.3f, mean P(expected name) %.3f"
              % (sum(r["p_no"] for r in rows) / n, sum(r["p_names"] for r in rows) / n,
                 sum(r["p_expected"] for r in rows) / n))
        print("offered names outweigh ' No': %d; best name is the expected one: %d; both: %d" % (outweigh, best_ok, both))


if __name__ == "__main__":
    main()
