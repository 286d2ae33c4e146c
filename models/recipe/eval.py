#!/usr/bin/env python3
"""Evaluate ngxllm-tiny on held-out conversations with greedy decoding.

  python3 eval.py --model ../ngxllm-tiny                    # transformers (GPU if present)
  python3 eval.py --model ../ngxllm-tiny --engine build/llm # our C engine, CPU

Held-out prompts come from gen_data.py's eval split (values and tool pairs
never seen in training).  Two stages per conversation: the first assistant
turn after the user's message (must call the right tools with exact
arguments, or not call any), and, for tool conversations, the answer after
the tool results (must not call again and should use a result value).

Scores: tool-call format validity, tool names, exact arguments, parallel
calls, no spurious calls, think-block well-formedness.  Writes a JSON file,
a markdown table and the raw outputs (JSONL) so engines can be compared.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chatfmt  # noqa: E402
import gen_data  # noqa: E402

STOPS = ("<|im_end|>", "<|endoftext|>")
CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def build_items(n, seed):
    items = []
    for ci, conv in enumerate(gen_data.generate("eval", n, seed)):
        msgs, tools, think = conv["messages"], conv["tools"], conv["enable_thinking"]
        prompt, k = chatfmt.first_prompt(conv)
        items.append({"id": "%d.1" % ci, "stage": 1, "kind": conv["meta"]["kind"], "think": think,
                      "messages": msgs[:k], "tools": tools, "prompt": prompt,
                      "expected": conv["meta"]["expected"]})
        if conv["meta"]["kind"] in ("single", "parallel"):
            last = len(msgs) - 1
            results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
            items.append({"id": "%d.2" % ci, "stage": 2, "kind": "answer", "think": think,
                          "messages": msgs[:last], "tools": tools,
                          "prompt": chatfmt.render(msgs[:last], tools, True, think),
                          "expected": [], "result_values": result_values(results)})
    return items


def result_values(results):
    vals = []

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, bool) or x is None:
            return
        elif isinstance(x, (int, float)):
            vals.append(json.dumps(x))
        elif isinstance(x, str) and len(x) >= 3 and x != "...":
            vals.append(x)
    for r in results:
        walk(r)
    return vals


def cut(text):
    end = len(text)
    for s in STOPS:
        i = text.find(s)
        if i >= 0:
            end = min(end, i)
    return text[:end], end < len(text)


def analyse(item, raw):
    text, stopped = cut(raw)
    a = {"stopped": stopped}
    if item["think"]:
        ok = (text.startswith("<think>\n") and text.count("<think>") == 1
              and text.count("</think>") == 1 and "</think>\n\n" in text)
        body = text.split("</think>", 1)[1].lstrip("\n") if "</think>" in text else text
    else:
        ok = "<think>" not in text and "</think>" not in text
        body = text
    a["think_ok"] = ok
    blocks = CALL_RE.findall(body)
    calls, valid = [], bool(blocks) and body.count("<tool_call>") == len(blocks) \
        and body.count("</tool_call>") == len(blocks)
    for b in blocks:
        try:
            obj = json.loads(b.strip())
        except ValueError:
            valid = False
            continue
        if not (isinstance(obj, dict) and isinstance(obj.get("name"), str)
                and isinstance(obj.get("arguments"), dict) and set(obj) == {"name", "arguments"}):
            valid = False
            continue
        calls.append(obj)
    a["has_call"] = "<tool_call>" in body
    a["valid"] = valid
    a["calls"] = calls
    exp = item["expected"]
    canon = lambda cs: sorted(json.dumps([c["name"], c["arguments"]], sort_keys=True) for c in cs)
    a["names_ok"] = sorted(c["name"] for c in calls) == sorted(c["name"] for c in exp)
    a["exact"] = valid and canon(calls) == canon(exp)
    content = CALL_RE.sub("", body).strip()
    if item["kind"] == "answer":
        a["uses_result"] = any(v in content for v in item["result_values"])
    return a


def score(items, outputs):
    rows = []
    an = [analyse(it, out) for it, out in zip(items, outputs)]

    def rate(name, sel, key):
        idx = [i for i, it in enumerate(items) if sel(it)]
        if not idx:
            return
        k = sum(1 for i in idx if key(an[i]))
        rows.append({"metric": name, "n": len(idx), "ok": k, "rate": round(100.0 * k / len(idx), 1)})

    call = lambda it: it["kind"] in ("single", "parallel")
    rate("tool-call format valid", call, lambda a: a["valid"])
    rate("correct tool names", call, lambda a: a["names_ok"])
    rate("exact arguments (all calls of the turn)", call, lambda a: a["exact"])
    rate("  single call, exact", lambda it: it["kind"] == "single", lambda a: a["exact"])
    rate("  parallel calls, exact (2-3 calls)", lambda it: it["kind"] == "parallel", lambda a: a["exact"])
    rate("no spurious call: tools offered, none needed", lambda it: it["kind"] == "no_tool",
         lambda a: not a["has_call"])
    rate("no spurious call: tool needed but not offered", lambda it: it["kind"] == "refusal",
         lambda a: not a["has_call"])
    rate("no spurious call: no tools", lambda it: it["kind"] == "chat", lambda a: not a["has_call"])
    rate("answer after tool results: no new call", lambda it: it["kind"] == "answer",
         lambda a: not a["has_call"])
    rate("answer after tool results: quotes a result value", lambda it: it["kind"] == "answer",
         lambda a: a.get("uses_result"))
    rate("think block well-formed (thinking on)", lambda it: it["think"], lambda a: a["think_ok"])
    rate("no think block (thinking off)", lambda it: not it["think"], lambda a: a["think_ok"])
    rate("stopped at <|im_end|>", lambda it: True, lambda a: a["stopped"])
    return rows, an


def markdown(rows, title):
    out = ["### " + title, "", "| metric | n | ok | % |", "|---|---:|---:|---:|"]
    for r in rows:
        out.append("| %s | %d | %d | %.1f |" % (r["metric"], r["n"], r["ok"], r["rate"]))
    return "\n".join(out) + "\n"


# ---- generators ----

def generate_hf(model_dir, items, batch, max_new):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        tok = AutoTokenizer.from_pretrained(model_dir)
    except Exception as e:  # keep evaluating; the report says which loader ran
        print("AutoTokenizer failed (%s); using PreTrainedTokenizerFast directly" % e)
        from transformers import PreTrainedTokenizerFast
        tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(model_dir, "tokenizer.json"),
                                      eos_token="<|im_end|>", pad_token="<|endoftext|>")
        tok.chat_template = chatfmt.template_source()
    print("tokenizer class:", type(tok).__name__)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to(dev).eval()
    # the prompt transformers renders from tokenizer_config.json must equal ours
    mism = 0
    for it in items:
        hf = tok.apply_chat_template(it["messages"], tools=it["tools"] or None, tokenize=False,
                                     add_generation_prompt=True, enable_thinking=it["think"])
        if hf != it["prompt"]:
            mism += 1
            if mism <= 2:
                print("template mismatch on", it["id"], repr(hf[-200:]), repr(it["prompt"][-200:]))
    print("transformers apply_chat_template == recipe render: %d/%d" % (len(items) - mism, len(items)))
    eos = [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]
    order = sorted(range(len(items)), key=lambda i: len(items[i]["prompt"]))
    outs = [None] * len(items)
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        enc = tok([items[i]["prompt"] for i in idx], return_tensors="pt", padding=True,
                  add_special_tokens=False).to(dev)
        with torch.no_grad():
            gen = model.generate(**enc, max_new_tokens=max_new, do_sample=False, eos_token_id=eos,
                                 pad_token_id=eos[1], top_k=None, top_p=None, temperature=None)
        for r, i in enumerate(idx):
            outs[i] = tok.decode(gen[r, enc["input_ids"].shape[1]:], skip_special_tokens=False)
    return outs


def generate_engine(engine, model_dir, items, max_new, jobs=2):
    """Our C stack through its CLI: `llm render` applies the chat template with our Jinja
    interpreter (checked against the recipe's jinja2 render), then `llm generate` tokenizes
    that prompt and decodes greedily on the CPU.  jobs prompts run at once, one thread each."""
    from concurrent.futures import ThreadPoolExecutor

    def one(it):
        req = {"messages": it["messages"], "tools": it["tools"] or None,
               "chat_template_kwargs": {"enable_thinking": it["think"]}}
        if not req["tools"]:
            del req["tools"]
        p = subprocess.run([engine, "render", "--model", model_dir, "--request", "-"],
                           input=json.dumps(req).encode(), capture_output=True, timeout=60)
        prompt = p.stdout.decode("utf-8", errors="replace")
        same = p.returncode == 0 and prompt == it["prompt"]
        if p.returncode != 0:
            return "", False, "render: " + p.stderr.decode(errors="replace")[:200]
        g = subprocess.run([engine, "generate", "--model", model_dir, "--text", prompt,
                            "--max-tokens", str(max_new), "--threads", "1"],
                           capture_output=True, timeout=600)
        if g.returncode != 0:
            return "", same, "generate: " + g.stderr.decode(errors="replace")[:200]
        j = json.loads(g.stdout.decode("utf-8", errors="replace"))
        # the CLI drops special tokens when decoding: mark a stop the way transformers shows it
        return j.get("text", "") + ("<|im_end|>" if j.get("finish") == "stop" else ""), same, None

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        res = list(ex.map(one, items))
    errors = [(it["id"], e) for it, (_, _, e) in zip(items, res) if e]
    for i, e in errors[:5]:
        print("engine error on %s: %s" % (i, e))
    same = sum(1 for _, s_, _ in res if s_)
    print("llm render == recipe render (jinja2): %d/%d; engine errors: %d" % (same, len(items), len(errors)))
    return [o for o, _, _ in res], {"render_identical": same, "errors": len(errors)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(HERE, "..", "ngxllm-tiny"))
    ap.add_argument("--n", type=int, default=500, help="held-out conversations")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--engine", help="path of build/llm: evaluate through our engine instead")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--jobs", type=int, default=2, help="engine mode: prompts run at once")
    ap.add_argument("--max-new", type=int, default=320)
    ap.add_argument("--prefix", default="eval_hf", help="output files: PREFIX.json .md .jsonl")
    ap.add_argument("--compare", help="raw outputs JSONL of another engine: report identical outputs")
    a = ap.parse_args()
    items = build_items(a.n, a.seed)
    t0 = time.time()
    if a.engine:
        outs, extra = generate_engine(a.engine, a.model, items, a.max_new, a.jobs)
        title = "our engine (%s, CPU), greedy" % os.path.basename(a.engine)
    else:
        outs, extra = generate_hf(a.model, items, a.batch, a.max_new), {}
        title = "transformers, greedy"
    el = time.time() - t0
    rows, an = score(items, outs)
    md = markdown(rows, "%s: %d prompts from %d held-out conversations" % (title, len(items), a.n))
    if extra:
        md += "\nprompts rendered by our template engine identical to jinja2: %d/%d; engine errors: %d\n" % (
            extra["render_identical"], len(items), extra["errors"])
    if a.compare:
        other = {}
        with open(a.compare, encoding="utf-8") as f:
            for line in f:
                o = json.loads(line)
                other[o["id"]] = o["output"]
        same = sum(1 for it, o in zip(items, outs) if cut(other.get(it["id"], "\0"))[0] == cut(o)[0])
        md += "\nidentical outputs to %s: %d/%d\n" % (os.path.basename(a.compare), same, len(items))
    print(md)
    print("generation took %.1fs" % el)
    with open(a.prefix + ".json", "w") as f:
        json.dump({"title": title, "n_conversations": a.n, "seed": a.seed, "rows": rows, **extra}, f, indent=1)
    with open(a.prefix + ".md", "w") as f:
        f.write(md)
    with open(a.prefix + ".jsonl", "w", encoding="utf-8") as f:
        for it, o, x in zip(items, outs, an):
            f.write(json.dumps({"id": it["id"], "kind": it["kind"], "think": it["think"],
                                "output": cut(o)[0], "stopped": x["stopped"],
                                "valid": x["valid"], "exact": x["exact"]},
                               ensure_ascii=False) + "\n")
    # a few samples for the log
    for it, o in list(zip(items, outs))[:6]:
        print("---", it["id"], it["kind"], "think" if it["think"] else "no-think")
        print(it["prompt"][-160:].replace("\n", "\\n"))
        print(">>", cut(o)[0][:400].replace("\n", "\\n"))


if __name__ == "__main__":
    main()
