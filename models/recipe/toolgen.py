"""Procedural tools: the mechanics shared by the training lexicon (lex_train.py) and the
held-out one (heldout.py), each with its own words and phrasings (stdlib only).

A lexicon names objects ("invoice", domain "money", the actions it allows, its attributes
with their JSON Schema kinds), verb classes (get, list, create, ... each with the verbs a
tool name uses and the verbs a user says), description and request templates, and value
makers.  From it a Tool is drawn: a name in one of several styles (snake, camel, Pascal,
kebab, dotted, with or without a namespace), a description written one of many ways, 0-6
parameters of every JSON Schema type (string, number, integer, boolean, enum, array, nested
object; required or optional).  A Call of a tool draws values, a user request that carries
them (imperative, question, indirect; natural cues or the parameter's own words), the exact
arguments, a tool result and the answer that quotes it.  Near-miss distractors share the
object or the verb class of the tool.
"""
import json
import re


# ---- names ------------------------------------------------------------------

def split_words(s):
    """'dueDate' / 'due_date' / 'due-date' -> ['due', 'date']"""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", s)
    return [w.lower() for w in re.split(r"[\s_\-.]+", s) if w]


def join_words(words, style):
    words = [w for part in words for w in part.split()]
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    if style == "camel":
        return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])
    if style == "pascal":
        return "".join(w[:1].upper() + w[1:] for w in words)
    raise ValueError(style)


def tool_name(r, verb, noun, ns):
    """A tool name in one of the styles clients use."""
    vw, nw = verb.split(), noun.split()
    k = r.random()
    if k < 0.40:
        return join_words(vw + nw, "snake")
    if k < 0.55:
        return join_words(vw + nw, "camel")
    if k < 0.62:
        return join_words(vw + nw, "pascal")
    if k < 0.68:
        return join_words(vw + nw, "kebab")
    if k < 0.78:
        return join_words([ns] + vw + nw, r.choice(["snake", "snake", "camel"]))
    if k < 0.86:
        return join_words(nw + vw, r.choice(["snake", "camel"]))
    # dotted (namespaces of MCP servers and SDKs; the OpenAI name pattern refuses dots)
    noun_part = join_words(nw, r.choice(["snake", "camel"]))
    verb_part = join_words(vw, r.choice(["snake", "camel"]))
    return r.choice(["%s.%s" % (noun_part, verb_part), "%s.%s.%s" % (ns, noun_part, verb_part),
                     "%s.%s" % (ns, join_words(vw + nw, "snake"))])


def a_an(noun):
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


# ---- parameters ---------------------------------------------------------------

class Param:
    """One parameter of a tool: words of its name, kind, details (enum options, fields of an
    object, kind of array items), description, natural cue templates ('due on {v}')."""

    def __init__(self, words, kind, extra=None, desc=None, cues=(), ident=False):
        self.words, self.kind, self.extra = words, kind, extra
        self.desc, self.cues, self.ident = desc, list(cues), ident
        self.key = None
        self.required = False

    @property
    def label(self):
        return " ".join(self.words)


def parse_attr(spec):
    """'due date:date' / 'priority:enum(low/medium/high)' / 'tags:arr(word)' /
    'address:obj(street=text;city=place;zip=code5)' / '*id:id' (identifier)"""
    ident = spec.startswith("*")
    spec = spec.lstrip("*")
    name, _, kind = spec.partition(":")
    extra = None
    m = re.match(r"(\w+)\((.*)\)$", kind)
    if m:
        kind, body = m.group(1), m.group(2)
        if kind == "enum":
            extra = body.split("/")
        elif kind == "arr":
            extra = body
        elif kind == "obj":
            extra = [tuple(f.split("=")) for f in body.split(";")]
    return Param(name.split(), kind, extra, ident=ident)


SCHEMA_TYPE = {"text": "string", "name": "string", "place": "string", "id": "string",
               "email": "string", "url": "string", "path": "string", "date": "string",
               "time": "string", "code": "string", "word": "string", "code5": "string",
               "phone": "string", "lang": "string", "expr": "string", "query": "string",
               "int": "integer", "num": "number", "money": "number", "bool": "boolean",
               "enum": "string", "arr": "array", "obj": "object", "currency": "string"}


def param_schema(r, p, lex, plain=False):
    key_style = p.key_style
    d = {"type": SCHEMA_TYPE[p.kind]}
    if p.kind == "enum":
        d["enum"] = list(p.extra)
    elif p.kind == "arr":
        d["items"] = {"type": SCHEMA_TYPE[p.extra]}
    elif p.kind == "obj":
        props = {}
        for fname, fkind in p.extra:
            fd = {"type": SCHEMA_TYPE[fkind]}
            if not plain and r.random() < 0.4:
                fd["description"] = lex.param_desc(r, Param(fname.split(), fkind))
            props[join_words(fname.split(), key_style)] = fd
        d["properties"] = props
        if r.random() < 0.7:
            d["required"] = list(props)
    if p.kind == "date" and r.random() < 0.3:
        d["format"] = "date"
    if p.kind == "email" and r.random() < 0.3:
        d["format"] = "email"
    if not plain and r.random() < 0.75:
        d["description"] = p.desc or lex.param_desc(r, p)
    if p.kind in ("int", "num") and r.random() < 0.15:
        d["minimum"] = 0
    return d


# ---- tools ---------------------------------------------------------------------

class Tool:
    """A drawn tool: object, verb class, name, parameters and schema."""

    def __init__(self, obj, cls, verb, name, params, schema, desc):
        self.obj, self.cls, self.verb, self.name = obj, cls, verb, name
        self.params, self.schema, self.desc = params, schema, desc

    @property
    def concept(self):
        return (self.obj["noun"], self.cls)


def draw_params(r, lex, obj, cls):
    """The parameters of a tool of verb class cls on obj: identifiers for get/update/delete,
    attributes for create/update/list and the class's own parameters; 0-6 in all."""
    attrs = [parse_attr(a) for a in obj["attrs"]]
    ids = [a for a in attrs if a.ident] or [Param(["id"], "id", ident=True)]
    rest = [a for a in attrs if not a.ident]
    own = [parse_attr(a) for a in lex.class_params.get(cls, [])]
    r.shuffle(rest)
    out = []
    if cls in ("get", "update", "delete", "start", "stop", "check", "export"):
        if not (cls in ("get", "check") and obj.get("singleton")):
            out.append(r.choice(ids))
        extra = {"get": (0, 2), "update": (1, 4), "delete": (0, 1), "start": (0, 1), "stop": (0, 1),
                 "check": (0, 2), "export": (0, 1)}[cls]
        out += rest[:r.randint(*extra)]
        if cls != "update" and own and r.random() < 0.5:
            out.append(r.choice(own))
    elif cls == "list":
        if r.random() < 0.15:
            return []
        out += rest[:r.randint(0, 3)]
        r.shuffle(own)
        out += own[:r.randint(0, 2)]
    else:  # create, send, compute, import
        out += rest[:r.randint(1, min(6, max(1, len(rest))))]
        if own and r.random() < 0.3:
            out.append(r.choice(own))
    seen, uniq = set(), []
    for p in out:
        if p.label not in seen:
            seen.add(p.label)
            uniq.append(p)
    return uniq[:6]


def make_tool(r, lex, obj, cls, taken=()):
    names = obj.get("name_verbs", {}).get(cls)
    verb = r.choice(names) if names and r.random() < 0.8 else r.choice(lex.verbs[cls]["name"])
    noun = obj["noun"] if cls != "list" or (r.random() < 0.4 and "all" not in verb) else obj["plural"]
    ns = r.choice(obj.get("ns") or [obj["domain"]])
    for _ in range(10):
        name = tool_name(r, verb, noun, ns)
        if name not in taken and len(name) <= 64:
            break
    key_style = "camel" if (r.random() < 0.25) else "snake"
    params = draw_params(r, lex, obj, cls)
    plain = r.random() < 0.15  # no descriptions anywhere (clients that send bare schemas)
    props, required = {}, []
    for p in params:
        p.key_style = key_style
        p.key = join_words(p.words, key_style)
        p.required = p.ident or r.random() < 0.55
        props[p.key] = param_schema(r, p, lex, plain)
        if p.required:
            required.append(p.key)
    parameters = {"type": "object", "properties": props}
    if required or r.random() < 0.5:
        parameters["required"] = required
    if r.random() < 0.1:
        parameters["additionalProperties"] = False
    desc = None if plain or r.random() < 0.1 else lex.tool_desc(r, obj, cls, params)
    f = {"name": name}
    if desc:
        f["description"] = desc
    f["parameters"] = parameters
    schema = {"type": "function", "function": f}
    return Tool(obj, cls, verb, name, params, schema, desc)


def near_misses(r, lex, tool, k):
    """Concepts close to tool's: the same object with another verb class, or the same verb
    class on another object of its domain, then anything."""
    obj, cls = tool.obj, tool.cls
    same_obj = [(obj, c) for c in obj["actions"] if c != cls]
    dom = lex.by_domain.get(obj["domain"], [])
    same_dom = [(o, cls) for o in dom if o is not obj and cls in o["actions"]]
    same_dom += [(o, c) for o in dom if o is not obj for c in o["actions"]]
    r.shuffle(same_obj)
    r.shuffle(same_dom)
    out = same_obj[:r.randint(0, min(2, len(same_obj)))] + same_dom[:k]
    return out[:k]


# ---- values and mentions ----------------------------------------------------------

def spoken_list(r, items):
    items = [str(x) for x in items]
    if len(items) == 1:
        return items[0]
    k = r.random()
    if k < 0.5:
        return ", ".join(items[:-1]) + " and " + items[-1]
    if k < 0.8:
        return ", ".join(items)
    return ", ".join(items[:-1]) + ", and " + items[-1]


def draw_value(r, lex, p):
    """(JSON value, how the user says it) for parameter p."""
    k = p.kind
    if k == "enum":
        v = r.choice(p.extra)
        return v, v
    if k == "bool":
        v = r.random() < 0.6
        return v, v
    if k == "arr":
        n = r.randint(1, 4)
        vals = []
        for _ in range(n):
            x, _s = lex.value(r, p.extra)
            if x not in vals:
                vals.append(x)
        return vals, spoken_list(r, vals)
    if k == "obj":
        v, said = {}, []
        for fname, fkind in p.extra:
            x, s = lex.value(r, fkind)
            v[fname] = x
            said.append((fname, s))
        return v, said
    return lex.value(r, k)


class Call:
    """One call of a tool: arguments, the words that ask for it, result and answer."""

    def __init__(self, tool, args, mentions, ask_vals):
        self.tool, self.args, self.mentions, self.ask_vals = tool, args, mentions, ask_vals
        self.request = self.clause = None
        self.result = self.answer = None


def make_call(r, lex, tool, opt_rate=0.5):
    """Values for the required parameters and some optional ones, and their mentions."""
    args, mentions, vals = {}, [], {}
    for p in tool.params:
        if not p.required and r.random() > opt_rate:
            continue
        v, said = draw_value(r, lex, p)
        if p.kind == "obj":
            args[p.key] = {join_words(f.split(), p.key_style): x for f, x in v.items()}
        else:
            args[p.key] = v
        vals[p.key] = (v, said)
        mentions.append(lex.mention(r, p, v, said))
    # the same values in schema order; mentions in shuffled order most of the time
    order = list(range(len(mentions)))
    if r.random() < 0.5:
        r.shuffle(order)
    c = Call(tool, args, [mentions[i] for i in order], vals)
    c.request, c.clause = lex.request(r, tool, c)
    c.result, c.answer = lex.result(r, tool, c)
    return c


def canon(calls):
    return sorted(json.dumps([c["name"], c["arguments"]], sort_keys=True) for c in calls)


# ---- lexicon: words and phrasings; lex_train.py and heldout.py fill one each ------------

def cap(s):
    return s[:1].upper() + s[1:]


class Lexicon:
    """Word lists and templates.  Attributes a lexicon module sets (see lex_train.py):
    objects, verbs {cls: {name, say, desc}}, class_params {cls: [attr specs]},
    desc_forms, param_desc_forms {kind: [..]}, mention_forms {kind: [..]},
    bool_forms {True: [..], False: [..]}, request_forms, obj_forms {cls: [..]},
    result_forms {cls: [..]}, think_call, think_refuse, refusals, system_prompts,
    and value makers (value(r, kind))."""

    frame_noise = 0.0  # share of requests wrapped in chatter (a lexicon's noisy_frame)

    def setup(self):
        self.by_domain = {}
        for o in self.objects:
            self.by_domain.setdefault(o["domain"], []).append(o)
        self.concepts = [(o, c) for o in self.objects for c in o["actions"]]

    def draw_concept(self, r):
        """A concept to make a tool of: one of the lexicon's (a lexicon may invent some)."""
        return r.choice(self.concepts)

    # descriptions
    def tool_desc(self, r, obj, cls, params):
        verb = r.choice(self.verbs[cls]["desc"])
        noun = obj["plural"] if cls == "list" else obj["noun"]
        form = r.choice(self.desc_forms)
        lab = params[0].label if params else "details"
        d = form.format(Desc=verb, desc=verb.lower(), noun=noun,
                        a_noun=("the " if r.random() < 0.5 else "all ") + noun if cls == "list" else a_an(noun),
                        plural=obj["plural"], domain=obj["domain"], label=lab,
                        say=r.choice(self.verbs[cls]["say"]))
        if r.random() < 0.2:
            d = d.rstrip(".")
        if r.random() < 0.15:
            d = d[:1].lower() + d[1:]
        return d

    def param_desc(self, r, p):
        forms = self.param_desc_forms.get(p.kind) or self.param_desc_forms["*"]
        d = r.choice(forms).format(label=p.label, Label=cap(p.label),
                                   opts=", ".join(p.extra) if p.kind == "enum" else "")
        return d

    # mentions
    def mention(self, r, p, v, said):
        if p.kind == "bool":
            return r.choice(self.bool_forms[bool(v)]).format(label=p.label)
        if p.kind == "obj":
            parts = [(f, s) for f, s in said]
            inner = r.choice(self.obj_inner_forms)
            body = inner[1].join(inner[0].format(f=f, v=self.quote(r, s)) for f, s in parts)
            return r.choice(self.obj_forms_m).format(label=p.label, body=body)
        if p.cues and r.random() < 0.5:
            return r.choice(p.cues).format(v=self.quote(r, said))
        comp = getattr(self, "compose_mentions", None)
        if comp and r.random() < 0.5:
            leads, conns, vfirst = comp
            v = self.quote(r, said) if p.kind != "arr" else said
            lab = ("the " if r.random() < 0.2 else "") + p.label
            if r.random() < 0.75:
                return r.choice(leads) + lab + r.choice(conns) + str(v)
            return r.choice(leads) + str(v) + r.choice(vfirst).format(label=p.label)
        forms = self.mention_forms.get(p.kind) or self.mention_forms["*"]
        return r.choice(forms).format(label=p.label, v=self.quote(r, said) if p.kind != "arr" else said)

    def quote(self, r, s):
        s = str(s)
        if " " in s and r.random() < 0.75:
            q = r.choice(['"%s"', '"%s"', "'%s'", "`%s`"]) if not ("'" in s or "`" in s) else '"%s"'
            return q % s
        return s

    # requests
    def request(self, r, tool, call):
        obj, cls = tool.obj, tool.cls
        asks = obj.get("asks", {}).get(cls, [])
        keys = {p.label for p in tool.params if p.key in call.args}
        fits = [a for a in asks if set(re.findall(r"\{([a-z ]+)\}", a)) == keys]
        if fits and r.random() < 0.6:
            vals = {p.label: self.quote(r, call.ask_vals[p.key][1]) for p in tool.params
                    if p.key in call.args}
            q = r.choice(fits)
            for k, v in vals.items():
                q = q.replace("{%s}" % k, str(v))
            return q, q[:1].lower() + q[1:].rstrip("?.!")
        say = r.choice(self.verbs[cls]["say"])
        objp = r.choice(self.obj_phrase[cls]).format(noun=obj["noun"], plural=obj["plural"],
                                                     a_noun=a_an(obj["noun"]))
        ms = call.mentions
        if not ms:
            tail = ""
        elif len(ms) == 1:
            tail = " " + ms[0]
        else:
            j = r.choice([", ", " ", " and ", ", "])
            tail = " " + j.join(ms[:-1]) + r.choice([" and ", ", ", ", and "]) + ms[-1]
        clause = "%s %s%s" % (say, objp, tail)
        frame = getattr(self, "compose_frame", None)
        if frame and r.random() < 0.5:
            text = frame(r, clause)
        else:
            text = r.choice(self.request_forms).format(c=clause, C=cap(clause))
        if r.random() < 0.08:
            text = text.rstrip(".?!")
        noisy = getattr(self, "noisy_frame", None)
        if noisy and self.frame_noise and r.random() < self.frame_noise:
            text = noisy(r, text)
        return text, clause

    # results and answers
    def result(self, r, tool, call):
        cls, obj = tool.cls, tool.obj
        rid, _ = self.value(r, "id")
        n = r.randint(0, 40)
        noun = obj["noun"]
        if cls == "get":
            res = {"id": rid}
            for a in obj["attrs"][:4]:
                p = parse_attr(a)
                if p.kind not in ("arr", "obj", "bool"):
                    v, _ = draw_value(r, self, p)
                    res[join_words(p.words, "snake")] = v
            keys = [k for k in res if k != "id"] or ["id"]
            k = r.choice(keys)
            ans = r.choice(self.answer_forms["get"]).format(noun=noun, label=k.replace("_", " "),
                                                            v=res[k], id=rid)
        elif cls == "list":
            names = [self.value(r, "name")[0] for _ in range(r.randint(0, 3))]
            res = {"items": [{"id": self.value(r, "id")[0], "name": x} for x in names],
                   "total": len(names)}
            if names:
                ans = r.choice(self.answer_forms["list"]).format(n=len(names), plural=obj["plural"],
                                                                 names=spoken_list(r, names))
            else:
                ans = r.choice(self.answer_forms["none"]).format(plural=obj["plural"])
        elif cls == "compute":
            v = round(r.uniform(-500, 5000), r.choice([0, 2])) if r.random() < 0.5 else r.randint(0, 99999)
            v = int(v) if float(v).is_integer() else v
            res = {"result": v}
            ans = r.choice(self.answer_forms["compute"]).format(v=v, noun=noun)
        else:
            st = r.choice(self.status_words[cls])
            res = {"id": rid, "status": st}
            if r.random() < 0.4:
                res["count"] = n
            ans = r.choice(self.answer_forms["done"]).format(noun=noun, id=rid, status=st,
                                                             say=self.verbs[cls]["past"])
        return res, ans

    def think_call(self, r, calls):
        if len(calls) == 1:
            c = calls[0]
            return r.choice(self.think_call_forms).format(
                name=c.tool.name, noun=c.tool.obj["noun"], a_noun=a_an(c.tool.obj["noun"]),
                say=self.verbs[c.tool.cls]["say"][0],
                keys=", ".join(c.args) if c.args else "no arguments")
        parts = ", ".join("%s (%s)" % (c.clause, c.tool.name) for c in calls)
        return r.choice(self.think_multi_forms).format(n=len(calls), parts=parts)

    def think_refuse(self, r, want, near):
        return r.choice(self.think_refuse_forms if near else self.think_refuse_none).format(
            say=want[1] and self.verbs[want[1]]["say"][0], noun=want[0]["noun"],
            a_noun=a_an(want[0]["noun"]), near=near or "none of them")

    def refusal(self, r, want):
        return r.choice(self.refusal_forms).format(
            say=self.verbs[want[1]]["say"][0], a_noun=a_an(want[0]["noun"]), noun=want[0]["noun"],
            plural=want[0]["plural"])


# ---- conversations ------------------------------------------------------------------

def call_msgs(r, calls, think, reasoning, content=""):
    tcs, results = [], []
    for c in calls:
        cid = "call_%08x" % r.getrandbits(32)
        tcs.append({"id": cid, "type": "function",
                    "function": {"name": c.tool.name,
                                 "arguments": json.dumps(c.args, ensure_ascii=False)}})
        results.append({"role": "tool", "tool_call_id": cid, "name": c.tool.name,
                        "content": json.dumps(c.result, ensure_ascii=False)})
    m = {"role": "assistant", "content": content, "tool_calls": tcs}
    if think:
        m["reasoning_content"] = reasoning
    return m, results


def assistant(content, think, reasoning):
    m = {"role": "assistant", "content": content}
    if think:
        m["reasoning_content"] = reasoning
    return m


class ProcGen:
    """Conversations around procedural tools of one lexicon, drawn from one random source."""

    def __init__(self, lex, r):
        self.lex, self.r = lex, r

    def tools_for(self, concepts, taken):
        out = []
        for obj, cls in concepts:
            t = make_tool(self.r, self.lex, obj, cls, taken)
            taken.add(t.name)
            out.append(t)
        return out

    def offered(self, targets, n_near, n_rand, avoid=()):
        """Tools offered with targets: near misses of each, random others; no concept twice
        and none of avoid (the concept a refusal asks for)."""
        r, lex = self.r, self.lex
        seen = {t.concept for t in targets} | {(o["noun"], c) for o, c in avoid}
        taken = {t.name for t in targets}
        picks = []
        for t in targets:
            for o, c in near_misses(r, lex, t, n_near):
                if (o["noun"], c) not in seen:
                    seen.add((o["noun"], c))
                    picks.append((o, c))
        for _ in range(n_rand * 3):
            if len(picks) >= n_near * len(targets) + n_rand:
                break
            o, c = lex.draw_concept(r)
            if (o["noun"], c) not in seen:
                seen.add((o["noun"], c))
                picks.append((o, c))
        tools = list(targets) + self.tools_for(picks, taken)
        r.shuffle(tools)
        return tools

    def new_call(self, concept=None, taken=()):
        r, lex = self.r, self.lex
        obj, cls = concept or lex.draw_concept(r)
        tool = make_tool(r, lex, obj, cls, set(taken))
        return make_call(r, lex, tool)

    def user_text(self, calls):
        r = self.r
        if len(calls) == 1:
            return calls[0].request
        cl = [c.clause for c in calls]
        forms = self.lex.parallel_forms if len(calls) == 2 else self.lex.triple_forms
        return r.choice(forms).format(a=cl[0], b=cl[1], c=cl[-1], A=cap(cl[0]))

    def exchange(self, calls, think, tools):
        """[user, assistant call, tool results..., assistant answer] for calls."""
        r, lex = self.r, self.lex
        content = r.choice(lex.preambles) if r.random() < 0.08 else ""
        call, results = call_msgs(r, calls, think, lex.think_call(r, calls), content)
        ans = " ".join(c.answer for c in calls)
        why = r.choice(lex.think_answer_forms).format(n=len(calls), name=calls[0].tool.name)
        return [{"role": "user", "content": self.user_text(calls)}, call] + results + [
            assistant(ans, think, why)]

    def calls_kind(self, n, think, n_near=(1, 4), n_rand=(0, 4)):
        r = self.r
        if n > 1 and r.random() < 0.3:
            first = self.new_call()
            calls = [first] + [make_call(r, self.lex, first.tool) for _ in range(n - 1)]
            if len({json.dumps(c.args, sort_keys=True) for c in calls}) < n:
                return self.calls_kind(n, think, n_near, n_rand)
        else:
            calls, taken, concepts = [], set(), set()
            while len(calls) < n:
                c = self.new_call(taken=taken)
                if c.tool.concept in concepts:
                    continue
                concepts.add(c.tool.concept)
                taken.add(c.tool.name)
                calls.append(c)
        targets = list({c.tool.name: c.tool for c in calls}.values())
        tools = self.offered(targets, r.randint(*n_near), r.randint(*n_rand))
        msgs = self.exchange(calls, think, tools)
        self.last_calls = calls
        meta = {"kind": "parallel" if n > 1 else "single",
                "expected": [{"name": c.tool.name, "arguments": c.args} for c in calls]}
        return msgs, tools, meta

    def refusal_kind(self, think, n_near=(1, 5), n_rand=(0, 4), want_call=None):
        """A request whose tool is not offered; near misses of it are."""
        r, lex = self.r, self.lex
        want = want_call or self.new_call()
        tools = self.offered([want.tool], r.randint(*n_near), r.randint(*n_rand),
                             avoid=[(want.tool.obj, want.tool.cls)])
        tools = [t for t in tools if t is not want.tool]
        if not tools:
            tools = self.tools_for([r.choice([c for c in lex.concepts if c[0] is not want.tool.obj])], set())
        near = [t.name for t in tools if t.obj is want.tool.obj or t.cls == want.tool.cls]
        why = lex.think_refuse(r, (want.tool.obj, want.tool.cls), near[0] if near else None)
        a = lex.refusal(r, (want.tool.obj, want.tool.cls))
        msgs = [{"role": "user", "content": want.request}, assistant(a, think, why)]
        return msgs, tools, {"kind": "refusal", "expected": []}

    def chat_kind(self, think, with_tools):
        r, lex = self.r, self.lex
        u, a, why = lex.chat(r)
        tools = self.offered([], 0, r.randint(1, 6)) if with_tools else []
        msgs = [{"role": "user", "content": u}, assistant(a, think, why)]
        return msgs, tools, {"kind": "no_tool" if with_tools else "chat", "expected": []}

    def history(self, tools, think_hist=False, k=1):
        """Earlier exchanges of the same conversation: calls of offered tools with their
        results and answers, or chat; reasoning dropped as the template drops it."""
        r, out = self.r, []
        for _ in range(k):
            if tools and r.random() < 0.7:
                t = r.choice(tools)
                c = make_call(r, self.lex, t)
                ex = self.exchange([c], False, tools)
            else:
                u, a, _ = self.lex.chat(r)
                ex = [{"role": "user", "content": u}, {"role": "assistant", "content": a}]
            for m in ex:
                m.pop("reasoning_content", None)
            out += ex
        return out

    def system(self, chars):
        r = self.r
        if chars <= 0:
            return r.choice(self.lex.system_prompts) if r.random() < 0.5 else None
        return self.lex.long_system(r, chars)

    def twin(self, conv):
        """The refused twin of a one-call conversation: the same request with its tool taken
        out of the offered list (so only the list tells a call from a refusal)."""
        r, lex = self.r, self.lex
        want = self.last_calls[0]
        msgs = conv["messages"]
        lu = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        tools = [s for s in conv["tools"] if s["function"]["name"] != want.tool.name]
        if not tools:
            tools = [t.schema for t in self.offered([], 0, 1, avoid=[(want.tool.obj, want.tool.cls)])]
        near = [s["function"]["name"] for s in tools]
        think = conv["enable_thinking"]
        why = lex.think_refuse(r, (want.tool.obj, want.tool.cls), r.choice(near) if near and r.random() < 0.7 else None)
        a = lex.refusal(r, (want.tool.obj, want.tool.cls))
        return {"messages": msgs[:lu + 1] + [assistant(a, think, why)], "tools": tools,
                "enable_thinking": think, "meta": {"kind": "refusal", "expected": []}}

    def conversation(self, kind, think, long_chars=0, n_tools=None, hist=0):
        """One conversation of kind single/parallel/refusal/no_tool/chat; long_chars > 0 puts
        it in an agent-shaped context: a long system prompt, n_tools tools, hist earlier
        exchanges."""
        r = self.r
        nn, nr = ((1, 4), (0, 4)) if not n_tools else ((2, 5), (n_tools, n_tools))
        if kind == "single":
            msgs, tools, meta = self.calls_kind(1, think, nn, nr)
        elif kind == "parallel":
            msgs, tools, meta = self.calls_kind(2 if r.random() < 0.8 else 3, think, nn, nr)
        elif kind == "refusal":
            msgs, tools, meta = self.refusal_kind(think, nn, nr)
        elif kind == "no_tool":
            msgs, tools, meta = self.chat_kind(think, True)
            if n_tools:
                tools = self.offered([], 0, n_tools)
        else:
            msgs, tools, meta = self.chat_kind(think, False)
        front = self.history(tools, k=hist) if hist else []
        sys_text = self.system(long_chars)
        if sys_text:
            front = [{"role": "system", "content": sys_text}] + front
        return {"messages": front + msgs, "tools": [t.schema for t in tools],
                "enable_thinking": think, "meta": meta}
