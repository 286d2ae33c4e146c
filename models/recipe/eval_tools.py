#!/usr/bin/env python3
"""Does the model read the offered tools?  Greedy evaluation on the held-out tools of
heldout.py (never in training), short and in long agent-shaped prompts, and the issue's
probe (8 ordinary tools x 16 plain requests, thinking on and off); set "train": as many fresh
conversations of the training distribution (--n), to tell reading from remembering.

  python3 eval_tools.py --model ../ngxllm-tiny --prefix tools_hf             # transformers
  python3 eval_tools.py --model ../ngxllm-tiny --engine ../../build/llm ...  # our engine, CPU

Metrics (first assistant turn after the user's message unless said):
  right tool        the calls name exactly the expected tools (single and parallel)
  exact arguments   ... and their arguments equal the expected ones (JSON equality)
  refusal           no call when no offered tool fits the request (near misses offered)
  non-offered       turns with a call to a tool that was not offered (all kinds)
  no call in chat   no call for plain chat, with tools offered or none
  answer            after the tool results: no new call, and a result value quoted
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chatfmt  # noqa: E402
import eval as ev  # noqa: E402
import heldout  # noqa: E402


def items_of(convs, tag, answers=True):
    items = []
    for ci, conv in enumerate(convs):
        msgs, tools, think, meta = conv["messages"], conv["tools"], conv["enable_thinking"], conv["meta"]
        prompt, k = chatfmt.first_prompt(conv)
        items.append({"id": "%s.%d.1" % (tag, ci), "set": tag, "stage": 1, "kind": meta["kind"], "think": think,
                      "messages": msgs[:k], "tools": tools, "prompt": prompt, "expected": meta["expected"],
                      "offered": meta["offered"]})
        if answers and meta["kind"] in ("single", "parallel"):
            last = len(msgs) - 1
            results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
            items.append({"id": "%s.%d.2" % (tag, ci), "set": tag, "stage": 2, "kind": "answer", "think": think,
                          "messages": msgs[:last], "tools": tools, "offered": meta["offered"],
                          "prompt": chatfmt.render(msgs[:last], tools, True, think),
                          "expected": [], "result_values": ev.result_values(results)})
    return items


def train_conversations(n, seed):
    """n fresh conversations of the training distribution (procedural tools of the training
    lexicon, 80% on invented objects, 40% of requests in chatter): what the model does where
    it was trained, beside the held-out sets, tells remembering from reading."""
    import gen_data
    convs = gen_data.generate("train", n, 90000 + seed, 0, proc=1.0, invent_objects=0.8, frame_noise=0.4)[:n]
    for c in convs:
        c["meta"]["offered"] = [(t.get("function") or t)["name"] for t in c["tools"] or []]
    return convs


def analyse(it, out):
    a = ev.analyse(it, out)
    a["non_offered"] = any(c["name"] not in it["offered"] for c in a["calls"])
    exp = it["expected"]
    a["right_tool"] = a["valid"] and sorted(c["name"] for c in a["calls"]) == sorted(c["name"] for c in exp)
    if it["kind"] in ("single", "parallel") and any(c["arguments"] is None for c in exp):
        a["exact"] = None  # the probe's requests that several argument values answer
    return a


def score(items, an, tag):
    rows = []

    def rate(name, sel, key):
        idx = [i for i, it in enumerate(items) if it["set"] == tag and sel(it) and key(an[i]) is not None]
        if idx:
            k = sum(1 for i in idx if key(an[i]))
            rows.append({"metric": name, "n": len(idx), "ok": k, "rate": round(100.0 * k / len(idx), 1)})

    calls = lambda it: it["kind"] in ("single", "parallel")
    rate("right tool", calls, lambda a: a["right_tool"])
    rate("exact arguments", calls, lambda a: a["exact"])
    rate("  single call: right tool", lambda it: it["kind"] == "single", lambda a: a["right_tool"])
    rate("  single call: exact arguments", lambda it: it["kind"] == "single", lambda a: a["exact"])
    rate("  parallel calls: exact arguments", lambda it: it["kind"] == "parallel", lambda a: a["exact"])
    rate("refusal when nothing fits (no call)", lambda it: it["kind"] == "refusal", lambda a: not a["has_call"])
    rate("calls to non-offered tools (lower is better)", lambda it: it["stage"] == 1, lambda a: a["non_offered"])
    rate("no call for plain chat", lambda it: it["kind"] in ("chat", "no_tool"), lambda a: not a["has_call"])
    rate("  with tools offered", lambda it: it["kind"] == "no_tool", lambda a: not a["has_call"])
    rate("  without tools", lambda it: it["kind"] == "chat", lambda a: not a["has_call"])
    rate("answer after results: no new call", lambda it: it["kind"] == "answer", lambda a: not a["has_call"])
    rate("answer after results: quotes a result", lambda it: it["kind"] == "answer", lambda a: a.get("uses_result"))
    rate("think block well-formed (thinking on)", lambda it: it["think"], lambda a: a["think_ok"])
    rate("stopped at <|im_end|>", lambda it: True, lambda a: a["stopped"])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(HERE, "..", "ngxllm-tiny"))
    ap.add_argument("--engine", help="path of build/llm: our engine on the CPU instead of transformers")
    ap.add_argument("--n", type=int, default=400, help="held-out conversations (short)")
    ap.add_argument("--n-train", type=int, default=0, help="training-distribution conversations (0: --n)")
    ap.add_argument("--n-long", type=int, default=200, help="held-out conversations in long prompts")
    ap.add_argument("--long", type=int, default=8000, help="tokens of a long prompt")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--sets", default="short,long,probe")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-new", type=int, default=320)
    ap.add_argument("--prefix", default="tools_hf")
    a = ap.parse_args()
    sets = a.sets.split(",")
    items = []
    if "short" in sets:
        items += items_of(heldout.conversations(a.n, a.seed), "short")
    if "long" in sets:
        items += items_of(heldout.conversations(a.n_long, a.seed + 1, a.long), "long", answers=False)
    if "train" in sets:
        items += items_of(train_conversations(a.n_train or a.n, a.seed), "train")
    if "probe" in sets:
        items += items_of(heldout.probe_conversations(), "probe", answers=False)
    for s in ("16k", "32k"):
        if s in sets:
            n_tok = int(s[:-1]) * 1000
            items += items_of(heldout.conversations(a.n_long // 4, a.seed + n_tok, n_tok), s, answers=False)
    t0 = time.time()
    ntok = {}
    if a.engine:
        outs, extra = ev.generate_engine(a.engine, a.model, items, a.max_new, a.jobs)
        title = "our engine (%s, CPU), greedy" % os.path.basename(a.engine)
    else:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(a.model)
        for it in items:
            ntok[it["id"]] = len(tok(it["prompt"], add_special_tokens=False)["input_ids"])
        outs = [None] * len(items)
        for tag in sets:
            idx = [i for i, it in enumerate(items) if it["set"] == tag]
            if not idx:
                continue
            longest = max(ntok[items[i]["id"]] for i in idx)
            bs = max(4, min(a.batch, int(a.batch * 2000 / max(2000, longest))))
            o = ev.generate_hf(a.model, [items[i] for i in idx], bs, a.max_new)
            for i, x in zip(idx, o):
                outs[i] = x
        extra = {}
        title = "transformers, greedy"
    el = time.time() - t0
    an = [analyse(it, o) for it, o in zip(items, outs)]
    md = []
    report = {"title": title, "model": a.model, "seconds": round(el, 1), "sets": {}}
    for tag in sets:
        rows = score(items, an, tag)
        if not rows:
            continue
        toks = [ntok[it["id"]] for it in items if it["set"] == tag and it["id"] in ntok and it["stage"] == 1]
        head = "### %s: %s" % (title, tag)
        if toks:
            toks.sort()
            head += " (prompt tokens min %d, median %d, max %d)" % (toks[0], toks[len(toks) // 2], toks[-1])
        md += [head, "", "| metric | n | ok | % |", "|---|---:|---:|---:|"]
        md += ["| %s | %d | %d | %.1f |" % (r["metric"], r["n"], r["ok"], r["rate"]) for r in rows]
        md.append("")
        report["sets"][tag] = {"rows": rows, "prompt_tokens": toks[:1] + toks[len(toks) // 2:len(toks) // 2 + 1] + toks[-1:] if toks else []}
    if extra:
        md.append("prompts rendered by our template engine identical to jinja2: %d/%d; engine errors: %d"
                  % (extra["render_identical"], len(items), extra["errors"]))
        report.update(extra)
    text = "\n".join(md)
    print(text)
    print("generation took %.1fs" % el)
    with open(a.prefix + ".json", "w") as f:
        json.dump(report, f, indent=1)
    with open(a.prefix + ".md", "w") as f:
        f.write(text + "\n")
    with open(a.prefix + ".jsonl", "w", encoding="utf-8") as f:
        for it, o, x in zip(items, outs, an):
            f.write(json.dumps({"id": it["id"], "kind": it["kind"], "think": it["think"], "tokens": ntok.get(it["id"]),
                                "expected": it["expected"], "output": ev.cut(o)[0], "right_tool": x["right_tool"],
                                "exact": x["exact"], "non_offered": x["non_offered"]}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
