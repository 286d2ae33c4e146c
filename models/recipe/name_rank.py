#!/usr/bin/env python3
"""Where does the model put the right tool among the offered ones?  For the held-out single-call
turns with thinking off, the prompt plus '<tool_call>\\n{"name": "' goes through our engine
(`llm logits`), and the offered names are ranked by the logit of their first token: top-1 here is
what greedy decoding would pick if it could only start an offered name; the rank of the expected
name tells a near miss from a guess.

  python3 name_rank.py --model DIR --engine build/llm --n 100 [--seed 11]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chatfmt  # noqa: E402
import heldout  # noqa: E402


def token_ids(engine, model, texts):
    p = subprocess.run([engine, "tokenize", "--model", model], input="".join(json.dumps(t) + "\n" for t in texts),
                       capture_output=True, text=True, check=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--engine", required=True)
    ap.add_argument("--n", type=int, default=100, help="held-out conversations (their single-call turns, thinking off, are used)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", help="JSONL of every turn")
    a = ap.parse_args()
    rows = []
    for conv in heldout.conversations(a.n, a.seed):
        meta = conv["meta"]
        if meta["kind"] != "single" or conv["enable_thinking"]:
            continue
        prompt, _ = chatfmt.first_prompt(conv)
        offered, want = meta["offered"], meta["expected"][0]["name"]
        first = [ids[0] for ids in token_ids(a.engine, a.model, offered)]
        p = subprocess.run([a.engine, "logits", "--model", a.model, "--threads", "1", "--text",
                            prompt + '<tool_call>\n{"name": "'], capture_output=True, text=True, check=True)
        logits = json.loads(p.stdout)["logits"]
        score = {n: logits[t] for n, t in zip(offered, first)}
        order = sorted(offered, key=lambda n: -score[n])
        # tools sharing the expected name's first token share its rank
        rank = 1 + sum(1 for n in offered if score[n] > score[want])
        best_any = max(range(len(logits)), key=lambda i: logits[i])
        rows.append({"expected": want, "rank": rank, "offered": len(offered), "top": order[0],
                     "argmax_is_offered_first_token": best_any in first,
                     "shares_first_token": sum(1 for t in first if t == first[offered.index(want)]) - 1})
    n = len(rows)
    top1 = sum(1 for r in rows if r["rank"] == 1)
    top2 = sum(1 for r in rows if r["rank"] <= 2)
    chance = sum(1.0 / r["offered"] for r in rows)
    mean_rank = sum(r["rank"] for r in rows) / max(1, n)
    mean_off = sum(r["offered"] for r in rows) / max(1, n)
    off = sum(1 for r in rows if r["argmax_is_offered_first_token"])
    print("single-call turns, thinking off: %d; offered tools per turn: %.1f on average" % (n, mean_off))
    print("expected name ranked first among the offered: %d (%.1f%%); in the first two: %d (%.1f%%); "
          "chance (1/offered) %.1f%%; mean rank %.2f" % (top1, 100.0 * top1 / max(1, n), top2, 100.0 * top2 / max(1, n),
                                                        100.0 * chance / max(1, n), mean_rank))
    print("the unconstrained argmax token starts an offered name: %d of %d" % (off, n))
    if a.out:
        with open(a.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
