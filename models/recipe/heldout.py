#!/usr/bin/env python3
"""Held-out evaluation of tool reading: tools the model never saw, from domains, nouns,
parameter names, descriptions, request frames and values of its own (none of them in
lex_train.py), built with the same JSON shapes as clients send.  Stdlib only.

  python3 heldout.py --check                 # the word lists are disjoint from training's
  python3 heldout.py --n 400 --seed 11 > items.jsonl
  python3 heldout.py --probe                 # the issue's probe: 8 ordinary tools x 16 requests

Kinds: single (one call), parallel (2-3 calls), refusal (nothing offered fits; near-miss
tools of the same object or the same action are offered), no_tool (tools offered, plain
chat), chat (no tools).  With --long TOKENS every conversation is put in an agent-shaped
context of about that many tokens: a long system prompt, 16-28 more tools, earlier
exchanges.  The verbs of tool names are the common action verbs (get, list, create, ...),
shared with training; everything else is held out.
"""
import argparse
import json
import random
import re
import sys

from toolgen import Lexicon, ProcGen, cap

OBJECTS = """
seedling/seedlings|garden|get,list,create,update,delete|*tray code:id;species:label;sown on:day;germinated:bool;shelf:int
garden bed/garden beds|garden|create,list,update,delete|*bed number:int;soil type:choice(loam/clay/sand/peat);sun hours:int;crops:many(label)
compost bin/compost bins|garden|get,check|*bin label:label;moisture level:choice(dry/moist/wet)
watering routine/watering routines|garden|create,get,update,delete|*zone:label;liters:decimal;start hour:clock;weekdays:many(label)
telescope/telescopes|astronomy|get,list,start,stop|*scope serial:id;aperture mm:int;mount:choice(altaz/equatorial)
observation/observations|astronomy|create,list,get,delete|*observation ref:id;target star:label;magnitude:decimal;observed at:day;seeing:choice(poor/fair/good/excellent)
constellation/constellations|astronomy|get,list|*constellation:label;hemisphere:choice(north/south)
pet/pets|veterinary|create,get,list,update,delete|*chip number:id;pet name:person;breed:label;weight kg:decimal;neutered:bool;owner phone:tel
vaccination/vaccinations|veterinary|create,list,get|*dose ref:id;vaccine:label;given on:day;booster due:day
kennel/kennels|veterinary|get,list,update|*kennel number:int;heated:bool;occupant:person
book checkout/book checkouts|library|create,get,list,delete,update|*loan ref:id;isbn:isbn;borrower card:id;return by:day;renewals:int
library membership/library memberships|library|create,get,check,delete|*card holder:person;card tier:choice(child/adult/senior);postal zone:digits
reading hall/reading halls|library|get,list,create|*room label:label;seats:int;quiet:bool
workout/workouts|fitness|create,get,list,delete,update|*session ref:id;exercise:label;sets:int;reps:int;weight lifted:decimal;felt easy:bool
pulse band/pulse bands|fitness|get,update,compute|*athlete:person;resting bpm:int;max bpm:int
running trail/running trails|fitness|create,list,get,delete|*trail label:label;km:decimal;elevation gain:int;loop:bool
recipe/recipes|kitchen|create,get,list,update,delete|*recipe ref:id;dish:label;servings:int;vegetarian:bool;ingredients:many(label);oven temp:int
pantry supply/pantry supplies|kitchen|create,list,update,delete|*barcode:digits;item label:label;grams left:int;best before:day
meal rota/meal rotas|kitchen|create,get,delete|*week number:int;diet:choice(omnivore/vegan/keto/paleo);guests:int
patient chart/patient charts|clinic|get,update,export|*chart ref:id;ward:label;blood type:choice(A+/A-/B+/B-/O+/O-/AB+/AB-);allergies:many(label)
prescription/prescriptions|clinic|create,get,delete,check|*rx ref:id;medicine:label;dosage mg:int;daily doses:int;refillable:bool
lab sample/lab samples|laboratory|create,get,list,check,delete|*sample barcode:id;specimen:choice(blood/urine/tissue/saliva);collected on:day;chilled:bool
centrifuge/centrifuges|laboratory|start,stop,get|*rotor ref:id;rpm:int;run minutes:int
course enrollment/course enrollments|school|create,list,delete,get|*pupil ref:id;course code:id;semester:choice(spring/summer/autumn);audit only:bool
grade report/grade reports|school|get,export,send|*pupil ref:id;term:label;guardian mail:mail
classroom/classrooms|school|get,list,update|*room code:id;capacity:int;projector:bool
property listing/property listings|realestate|create,get,list,update,delete|*listing ref:id;street line:label;asking price:decimal;bedrooms:int;garage:bool;district:label
viewing slot/viewing slots|realestate|create,list,delete|*slot ref:id;listing ref:id;on day:day;at hour:clock;agent:person
tractor/tractors|farm|get,start,stop,check|*tractor tag:id;fuel percent:int;implement:choice(plough/seeder/mower/baler)
herd/herds|farm|get,list,update|*herd tag:label;head count:int;pasture:label
harvest batch/harvest batches|farm|create,list,get,export|*batch ref:id;crop:label;tonnes:decimal;moisture percent:decimal;organic:bool
league fixture/league fixtures|sports|create,get,list,delete,update|*fixture ref:id;home side:label;away side:label;kickoff:day;venue:place2;televised:bool
player signing/player signings|sports|create,get,check|*player:person;from club:label;to club:label;fee:decimal
scoreboard/scoreboards|sports|get,update,start,stop|*arena code:id;home points:int;away points:int;period:int
exhibit/exhibits|museum|create,get,list,update,delete|*exhibit ref:id;artifact:label;era:choice(bronze/iron/medieval/modern);gallery wing:label;on loan:bool
guided tour/guided tours|museum|create,list,delete|*tour ref:id;guide:person;group size:int;tour language:tongue;tour day:day
parking permit/parking permits|parking|create,get,delete,check,update|*permit ref:id;plate:plate;zone letter:choice(A/B/C/D);valid until:day
parking meter/parking meters|parking|get,list,start,stop|*meter ref:id;street line:label;hourly rate:decimal
insurance claim/insurance claims|insurance|create,get,list,update,check|*claim ref:id;policy holder:person;incident day:day;damage estimate:decimal;photos:many(link)
premium offer/premium offers|insurance|compute,get|driver age:int;vehicle value:decimal;no claims years:int
court filing/court filings|legal|create,get,list,delete|*docket ref:id;plaintiff:person;defendant:person;filed on:day;sealed:bool
contract clause/contract clauses|legal|get,update,check|*clause ref:id;clause text:prose;governing law:place2
wine bottle/wine bottles|winery|create,list,get,update,delete|*bottle ref:id;vintage:int;grape:label;cellar rack:label;corked:bool
tasting verdict/tasting verdicts|winery|create,list,delete|*note ref:id;aroma:prose;score:int;sommelier:person
fish tank/fish tanks|aquarium|get,update,check,list|*tank ref:id;salinity:decimal;water temp:decimal;filter on:bool
feeding round/feeding rounds|aquarium|create,list,delete|*tank ref:id;food:label;pinches:int;fed at:clock
assembly line/assembly lines|factory|get,start,stop,check|*line ref:id;units per hour:int;shift:choice(early/late/night)
spare part/spare parts|factory|create,list,get,update,delete|*part ref:id;part label:label;bin shelf:label;reorder level:int;hazardous:bool
solar panel/solar panels|energy|get,list,check|*panel ref:id;tilt degrees:int;array row:int
battery pack/battery packs|energy|get,start,stop,update|*bank ref:id;charge limit percent:int;grid export:bool
delivery van/delivery vans|fleet|get,list,update,check|*van plate:plate;odometer km:int;driver:person;refrigerated:bool
fuel voucher/fuel vouchers|fleet|create,get,delete|*card ref:id;spending cap:decimal;driver:person
concert pass/concert passes|ticketing|create,get,list,delete,send|*ticket ref:id;performer:label;row letter:label;seat:int;vip:bool;buyer mail:mail
venue seating/venue seatings|ticketing|get,update|*venue:place2;tier:choice(floor/balcony/box);open seats:int
loaf reservation/loaf reservations|bakery|create,get,list,delete|*order ref:id;loaf:label;loaves:int;sliced:bool;pickup at:clock
oven/ovens|bakery|start,stop,get,update|*oven ref:id;celsius:int;steam:bool
mooring/moorings|marina|create,get,list,delete|*berth:id;boat label:label;length m:decimal;nights:int
tide chart/tide charts|marina|get|*harbour:place2;on day:day
hiking permit/hiking permits|outdoors|create,get,delete,check|*permit ref:id;trailhead:place2;hikers:int;overnight:bool;start day:day
campsite/campsites|outdoors|list,get,create,delete|*pitch ref:id;campground:place2;tents:int;electric hookup:bool
"""

VERBS = {
    "get": {"name": ["get", "fetch", "lookup", "retrieve", "show"], "say": ["get", "fetch", "look up", "show me", "pull up", "find"],
            "desc": ["Returns", "Fetches", "Looks up", "Retrieves"], "past": "fetched"},
    "list": {"name": ["list", "search", "browse", "find"], "say": ["list", "show", "search", "browse"],
             "desc": ["Lists", "Searches", "Browses"], "past": "listed"},
    "create": {"name": ["create", "add", "new", "register"], "say": ["create", "add", "register", "set up", "make"],
               "desc": ["Creates", "Adds", "Registers"], "past": "created"},
    "update": {"name": ["update", "edit", "modify", "change"], "say": ["update", "change", "edit", "modify"],
               "desc": ["Updates", "Edits", "Changes"], "past": "updated"},
    "delete": {"name": ["delete", "remove", "cancel"], "say": ["delete", "remove", "cancel", "get rid of"],
               "desc": ["Deletes", "Removes", "Cancels"], "past": "deleted"},
    "send": {"name": ["send", "share", "email"], "say": ["send", "share", "email"],
             "desc": ["Sends", "Shares", "Emails"], "past": "sent"},
    "compute": {"name": ["calculate", "compute", "estimate"], "say": ["calculate", "compute", "estimate", "work out"],
                "desc": ["Calculates", "Computes", "Estimates"], "past": "computed"},
    "start": {"name": ["start", "launch", "enable", "turn on"], "say": ["start", "turn on", "launch", "switch on"],
              "desc": ["Starts", "Launches", "Turns on"], "past": "started"},
    "stop": {"name": ["stop", "halt", "disable", "turn off"], "say": ["stop", "turn off", "halt", "switch off"],
             "desc": ["Stops", "Halts", "Turns off"], "past": "stopped"},
    "check": {"name": ["check", "verify", "validate", "inspect"], "say": ["check", "verify", "validate", "inspect"],
              "desc": ["Checks", "Verifies", "Validates"], "past": "checked"},
    "export": {"name": ["export", "download"], "say": ["export", "download"],
               "desc": ["Exports", "Downloads"], "past": "exported"},
}

CLASS_PARAMS = {
    "get": ["expand related:bool", "output style:choice(brief/full)"],
    "list": ["max items:int", "offset:int", "newest first:bool", "filter text:label"],
    "create": ["reference note:prose", "notify staff:bool"],
    "delete": ["hard delete:bool", "why:prose"],
    "start": ["warmup minutes:int"], "stop": ["emergency:bool"],
    "check": ["deep scan:bool"], "compute": ["decimals:int"],
    "export": ["file kind:choice(pdf/csv/xlsx)"],
}

DESC_FORMS = [
    "{Desc} {a_noun} record.", "{Desc} {a_noun} in the {domain} registry.", "{Desc} details about {a_noun}.",
    "Endpoint for {domain}: {desc} {a_noun}.", "{Desc} {a_noun}; needs the {label}.",
    "{Desc} {a_noun} and returns a confirmation.", "{Desc} {a_noun} for staff members.",
    "Operation on {plural}: {desc} one.",
]
PARAM_DESC = {"*": ["{Label} value", "Which {label}", "{Label} for the record"],
              "day": ["{Label}, formatted YYYY-MM-DD", "{Label} (ISO 8601 date)"],
              "clock": ["{Label} in 24-hour HH:MM"], "int": ["{Label} as a whole number", "Count of {label}"],
              "decimal": ["{Label} (decimal number)"], "bool": ["True to {label}", "{Label}? true or false"],
              "choice": ["{Label}, one of {opts}", "Allowed {label}: {opts}"], "many": ["{Label} list", "Array of {label}"]}
MENTION = {"*": ["{label} being {v}", "with {v} for the {label}", "{label} -> {v}", "the {label} should be {v}",
                 "{label} is {v}", "{label} {v}"],
           "int": ["{label} {v}", "{v} as the {label}", "a {label} of {v}", "{label} being {v}"],
           "decimal": ["{label} {v}", "a {label} of {v}", "{label} around {v}", "{label} being {v}"],
           "choice": ["{label} {v}", "{v} for the {label}", "the {label} should be {v}"],
           "many": ["{label} {v}", "{label} being {v}", "the {label} should be {v}"]}
BOOL = {True: ["{label} yes", "and yes to {label}", "{label} should be true", "with {label} switched on"],
        False: ["{label} no", "{label} should be false", "with {label} switched off", "and not {label}"]}
OBJ_FORMS = ["{label} {body}"]
OBJ_INNER = [("{f} {v}", ", ")]
REQUEST = ["Would it be possible to {c}?", "Kindly {c}.", "{C} - thanks!", "I was hoping you could {c}.",
           "Let's {c}.", "My request: {c}.", "Time to {c}.", "Could we {c}?", "Do me a favour and {c}.",
           "{C} when you get a chance.", "Right, {c}."]
OBJ_PHRASE = {"get": ["the {noun}", "this {noun}"], "list": ["the {plural}", "all {plural}"],
              "create": ["{a_noun}", "a fresh {noun}"], "update": ["the {noun}", "this {noun}"],
              "delete": ["the {noun}", "this {noun}"], "send": ["the {noun}"], "compute": ["the {noun}", "{a_noun}"],
              "start": ["the {noun}"], "stop": ["the {noun}"], "check": ["the {noun}", "this {noun}"],
              "export": ["the {noun}"]}
PARALLEL = ["{A}; after that, {b}.", "Could we {a} and then {b}?", "Two requests: {a}, plus {b}."]
TRIPLE = ["Three requests: {a}; {b}; {c}."]
ANSWERS = {"get": ["Found it - {label}: {v}.", "The {label} of that {noun} is {v}."],
           "list": ["{n} result(s): {names}."], "none": ["No {plural} came back."],
           "compute": ["Result: {v}."], "done": ["Finished - {noun} {say}, reference {id}.", "{id}: {status}."]}
STATUS = {c: ["ok", "done", "accepted"] for c in VERBS}
ASKS = {"premium offer": {"compute": ["How much would cover cost for a driver aged {driver age} with a car worth {vehicle value}?"]},
        "tide chart": {"get": ["When is high tide in {harbour} on {on day}?"]},
        "constellation": {"get": ["Tell me about the constellation {constellation}."]}}

FIRST = ["Odalys", "Teodor", "Marisol", "Bartholomew", "Ingrid", "Caspian", "Leocadia", "Ruairi", "Zelda",
         "Ambrose", "Perpetua", "Evander", "Sigrun", "Thaddeus", "Iolanthe", "Cormac", "Wilhelmina", "Florian"]
LAST = ["Quennell", "Abernathy", "Oyelaran", "Vasquez-Lind", "Thistlewood", "Marchetti", "Okonkwo", "Halvorsen",
        "Pemberton", "Ziegler", "Castellanos", "Drummond", "Achterberg", "Lindqvist"]
LABELS = ["Cobalt Heron", "amber-7", "Juniper", "Westgate North", "Polaris", "Saffron", "Tamarind", "Quartz Ridge",
          "blue fescue", "Arcturus", "Highland Clay", "Vega", "Marigold", "Orchard Lane", "Sirius B", "Pinewood",
          "chamomile", "Betelgeuse", "Riverside", "Calico", "Basalt", "Emberly", "Hollyhock", "Nightjar", "Kestrel",
          "Larkspur", "Merlot", "Grenache", "Albarino", "Tempranillo", "sourdough", "rye batard", "focaccia",
          "Harbour Town", "Elm Street 14", "Greyfriars", "Lupin", "Obsidian", "Cardamom", "Fennel", "Wisteria"]
PLACES = ["Port Aldous", "Kittering", "Vellmar Bay", "Skarholt", "Drumcliffe", "Oakhaven", "Lindenfels", "Marrowby",
          "Quillon", "Farnestead", "Ravensworth", "Tollbridge"]
PROSE = ["Keep the lid closed overnight.", "Slight hint of blackcurrant and cedar.", "Leaves turned yellow after the frost.",
         "Needs a second opinion before Friday.", "Customer asked for the quiet corner.", "Check the seal on the north side.",
         "Bring the spare key to reception.", "Smells of wet stone and honey.", "Handle with gloves at all times.",
         "Party of twelve arriving late."]
TONGUES = ["Estonian", "Catalan", "Icelandic", "Tagalog", "Welsh", "Basque", "Maltese", "Amharic"]
MAILDOMAINS = ["quillmail.net", "harbourpost.org", "fernbox.io", "oakline.co"]

CHAT = [("Good evening!", "Good evening! What can I do for you?"), ("Thanks a lot!", "You're welcome!"),
        ("How is your day going?", "It's going well, thank you. How can I help?"),
        ("Who made you?", "I am ngxllm-tiny, a small model made by the ngx_llm project."),
        ("See you later.", "See you later!"), ("That's helpful, cheers.", "Glad it helped!"),
        ("Morning!", "Good morning! How can I help?"), ("Are you there?", "Yes, I'm here. What do you need?"),
        ("Nice work.", "Thank you!"), ("Can I ask you something?", "Of course, go ahead."),
        ("Goodnight", "Goodnight! Talk to you soon."), ("Hiya", "Hi! What can I do for you?"),
        ("I appreciate it.", "You're welcome, happy to help."), ("What's up?", "Not much! How can I help you?")]

FILLER_WORDS = ("quarterly ledger harbour lantern meadow orchard granite copper velvet compass beacon "
                "thimble saddle anchor willow pebble furnace glacier quiver tapestry lattice marble "
                "ember spindle tundra cascade parchment hinge bramble citadel gazebo fathom").split()


class HeldLex(Lexicon):
    verbs = VERBS
    class_params = CLASS_PARAMS
    desc_forms = DESC_FORMS
    param_desc_forms = PARAM_DESC
    mention_forms = MENTION
    bool_forms = BOOL
    obj_forms_m = OBJ_FORMS
    obj_inner_forms = OBJ_INNER
    request_forms = REQUEST
    obj_phrase = OBJ_PHRASE
    parallel_forms = PARALLEL
    triple_forms = TRIPLE
    answer_forms = ANSWERS
    status_words = STATUS
    think_call_forms = ["The user wants to {say} {a_noun}; {name} fits, so I'll call it."]
    think_multi_forms = ["{n} requests: {parts}."]
    think_answer_forms = ["{name} answered; I'll report it."]
    think_refuse_forms = ["No offered tool can {say} {a_noun}; {near} does something else."]
    think_refuse_none = ["No offered tool can {say} {a_noun}."]
    refusal_forms = ["I can't {say} {a_noun} with the tools available."]
    preambles = ["Sure."]
    system_prompts = ["You are a helpful assistant for the front desk.", "Assist staff with their records.",
                      "You are a careful assistant. Use tools when they help."]

    def __init__(self):
        from lex_train import parse_objects
        self.objects = parse_objects(OBJECTS)
        for o in self.objects:
            if o["noun"] in ASKS:
                o["asks"] = ASKS[o["noun"]]
        self.setup()

    def value(self, r, kind):
        if kind == "name":
            kind = "label"
        if kind == "label":
            v = r.choice(LABELS) if r.random() < 0.6 else r.choice(FILLER_WORDS) + r.choice(["", "-%d" % r.randint(2, 99)])
            return v, v
        if kind == "person":
            v = r.choice(FIRST) + (" " + r.choice(LAST) if r.random() < 0.6 else "")
            return v, v
        if kind == "place2":
            v = r.choice(PLACES)
            return v, v
        if kind == "prose":
            v = r.choice(PROSE)
            return v, v
        if kind == "tongue":
            v = r.choice(TONGUES)
            return v, v
        if kind == "id":
            k = r.random()
            if k < 0.4:
                v = "%s%d" % (r.choice(["HX", "QV", "TR", "MZ", "KP", "WB"]), r.randint(1000, 99999))
            elif k < 0.7:
                v = "%s-%s" % (r.choice(FILLER_WORDS)[:4].upper(), r.randint(10, 9999))
            else:
                v = "".join(r.choice("bcdfghjkmnpqrstvwxz23456789") for _ in range(r.randint(6, 9)))
            return v, v
        if kind == "mail":
            v = "%s.%s@%s" % (r.choice(FIRST).lower(), r.choice(LAST).lower().replace("-", ""), r.choice(MAILDOMAINS))
            return v, v
        if kind == "link":
            v = "https://%s.example/%s/%d.jpg" % (r.choice(FILLER_WORDS), r.choice(FILLER_WORDS), r.randint(1, 500))
            return v, v
        if kind == "tel":
            v = "+%d %d %04d" % (r.randint(30, 49), r.randint(200, 899), r.randint(0, 9999))
            return v, v
        if kind == "isbn":
            v = "978-%d-%04d-%04d-%d" % (r.randint(0, 9), r.randint(0, 9999), r.randint(0, 9999), r.randint(0, 9))
            return v, v
        if kind == "plate":
            v = "%s %d %s" % ("".join(r.choice("BCDFGHKLMNPRSTVWXZ") for _ in range(2)), r.randint(10, 999),
                              "".join(r.choice("BCDFGHKLMNPRSTVWXZ") for _ in range(2)))
            return v, v
        if kind == "digits":
            v = "".join(r.choice("0123456789") for _ in range(r.choice([5, 6, 8, 13])))
            return v, v
        if kind == "day":
            y, m, d = r.randint(2024, 2029), r.randint(1, 12), r.randint(1, 28)
            v = "%04d-%02d-%02d" % (y, m, d)
            return v, v
        if kind == "clock":
            v = "%02d:%02d" % (r.randint(5, 22), r.choice([0, 15, 30, 45, 5, 25]))
            return v, v
        if kind == "int":
            v = r.choice([r.randint(1, 12), r.randint(10, 300), r.randint(100, 9000)])
            return v, str(v)
        if kind == "decimal":
            v = round(r.uniform(0.5, 900), r.choice([1, 2]))
            return v, str(v)
        raise ValueError(kind)

    def chat(self, r, with_tools=False):
        u, a = r.choice(CHAT)
        return u, a, "Just chatting; no tool needed."

    def long_system(self, r, chars):
        out = ["You are the operations assistant of %s. Staff rely on you for their records." % r.choice(PLACES)]
        while sum(len(x) for x in out) < chars:
            k = r.random()
            if k < 0.35:
                out.append("### %s\n" % cap(r.choice(FILLER_WORDS)) + "\n".join(
                    "* %s %s must be %s before the %s." % (cap(r.choice(FILLER_WORDS)), r.choice(FILLER_WORDS),
                                                           r.choice(["logged", "signed", "sealed", "checked"]),
                                                           r.choice(FILLER_WORDS)) for _ in range(r.randint(3, 7))))
            elif k < 0.7:
                out.append(" ".join("The %s near the %s was %s on %s." % (r.choice(FILLER_WORDS), r.choice(FILLER_WORDS),
                                                                           r.choice(["moved", "repaired", "counted", "painted"]),
                                                                           self.value(r, "day")[0]) for _ in range(r.randint(3, 7))))
            else:
                out.append("Staff list:\n" + "\n".join("  %s, %s, ext. %d" % (self.value(r, "person")[0], r.choice(FILLER_WORDS),
                                                                           r.randint(100, 999)) for _ in range(r.randint(3, 8))))
        return "\n\n".join(out)


# The shared kind names of toolgen (label, person, ...) are the held-out value kinds;
# toolgen's SCHEMA_TYPE needs them too.
import toolgen  # noqa: E402
toolgen.SCHEMA_TYPE.update({"label": "string", "person": "string", "place2": "string", "prose": "string",
                            "tongue": "string", "mail": "string", "link": "string", "tel": "string",
                            "isbn": "string", "plate": "string", "digits": "string", "day": "string",
                            "clock": "string", "decimal": "number", "choice": "string", "many": "array"})


class _Kinds:
    """toolgen's parameter kinds enum/arr are spelled choice/many here (own word list)."""


def _normalise(lex):
    for o in lex.objects:
        o["attrs"] = [a.replace(":choice(", ":enum(").replace(":many(", ":arr(") for a in o["attrs"]]
    for c, ps in lex.class_params.items():
        lex.class_params[c] = [a.replace(":choice(", ":enum(").replace(":many(", ":arr(") for a in ps]


_LEX = None


def lexicon():
    global _LEX
    if _LEX is None:
        _LEX = HeldLex()
        _normalise(_LEX)
        # enum/arr keep their toolgen names in schemas; their descriptions use ours
        _LEX.param_desc_forms = dict(PARAM_DESC, enum=PARAM_DESC["choice"], arr=PARAM_DESC["many"])
        _LEX.mention_forms = dict(MENTION, enum=MENTION["choice"], arr=MENTION["many"])
    return _LEX


KINDS = [("single", 0.40), ("parallel", 0.10), ("refusal", 0.20), ("no_tool", 0.15), ("chat", 0.15)]


def conversations(n, seed, long_tokens=0):
    """n held-out conversations; with long_tokens each is put in an agent-shaped context of
    about that many tokens (about 2.4 characters a token for these words, checked by the
    evaluation with the real tokenizer)."""
    lex = lexicon()
    out = []
    for i in range(n):
        r = random.Random(seed * 100003 + i)
        k, acc = r.random(), 0.0
        for kind, share in KINDS:
            acc += share
            if k < acc:
                break
        think = r.random() < 0.5
        g = ProcGen(lex, r)
        if long_tokens:
            conv = g.conversation(kind, think, 1, r.randint(16, 28), r.randint(1, 3))
            used = len(json.dumps(conv["tools"])) + sum(len(m.get("content") or "") + len(json.dumps(m.get("tool_calls", "")))
                                                         for m in conv["messages"])
            sys_chars = max(500, int(long_tokens * 2.5) - used)
            conv["messages"][0] = {"role": "system", "content": lex.long_system(r, sys_chars)}
        else:
            conv = g.conversation(kind, think, 0, None, 0)
        conv["meta"]["offered"] = [t["function"]["name"] for t in conv["tools"]]
        out.append(conv)
    return out


# ---- the probe: 8 ordinary tools, 16 plain requests ---------------------------

def _fn(name, desc, props, req):
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": req}}}


PROBE_TOOLS = [
    _fn("calculator", "Evaluate a math expression and return the result.",
        {"expression": {"type": "string", "description": "Math expression, e.g. 2 * (3 + 4)"}}, ["expression"]),
    _fn("convert_currency", "Convert an amount of money from one currency to another.",
        {"amount": {"type": "number"}, "from": {"type": "string", "description": "ISO currency code"},
         "to": {"type": "string", "description": "ISO currency code"}}, ["amount", "from", "to"]),
    _fn("send_email", "Send an email.", {"to": {"type": "string"}, "subject": {"type": "string"},
                                         "body": {"type": "string"}}, ["to", "subject", "body"]),
    _fn("create_calendar_event", "Create an event in the user's calendar.",
        {"title": {"type": "string"}, "date": {"type": "string", "description": "YYYY-MM-DD"},
         "time": {"type": "string", "description": "HH:MM"}}, ["title", "date"]),
    _fn("translate", "Translate text into another language.",
        {"text": {"type": "string"}, "target_language": {"type": "string"}}, ["text", "target_language"]),
    _fn("get_stock_price", "Get the latest price of a stock.", {"symbol": {"type": "string", "description": "Ticker symbol"}},
        ["symbol"]),
    _fn("web_search", "Search the web.", {"query": {"type": "string"}}, ["query"]),
    _fn("set_timer", "Start a countdown timer.", {"minutes": {"type": "integer"}}, ["minutes"]),
]

# (request, expected tool, expected arguments or None where several are right)
PROBE = [
    ("What is 1234 * 5678?", "calculator", {"expression": "1234 * 5678"}),
    ("Calculate 15% of 240.", "calculator", None),
    ("Convert 250 euros to US dollars.", "convert_currency", {"amount": 250, "from": "EUR", "to": "USD"}),
    ("How much is 100 GBP in JPY?", "convert_currency", {"amount": 100, "from": "GBP", "to": "JPY"}),
    ("Email bob@example.com with the subject Lunch and say see you at noon.", "send_email", None),
    ("Send an email to alice@corp.example saying the report is ready, subject Report.", "send_email", None),
    ("Add a dentist appointment to my calendar on 2025-06-12 at 09:30.", "create_calendar_event", None),
    ("Put Team offsite in my calendar for 2025-09-01.", "create_calendar_event", None),
    ("Translate good morning into German.", "translate", {"text": "good morning", "target_language": "German"}),
    ("How do you say thank you very much in Japanese?", "translate", {"text": "thank you very much", "target_language": "Japanese"}),
    ("What's the stock price of AAPL?", "get_stock_price", {"symbol": "AAPL"}),
    ("How is MSFT trading today?", "get_stock_price", {"symbol": "MSFT"}),
    ("Search the web for the best hiking boots.", "web_search", None),
    ("Look up the opening hours of the Louvre online.", "web_search", None),
    ("Set a timer for 10 minutes.", "set_timer", {"minutes": 10}),
    ("Start a 25 minute timer.", "set_timer", {"minutes": 25}),
]


def probe_conversations():
    out = []
    for i, (u, name, args) in enumerate(PROBE):
        for think in (False, True):
            out.append({"messages": [{"role": "user", "content": u}], "tools": PROBE_TOOLS,
                        "enable_thinking": think,
                        "meta": {"kind": "single", "expected": [{"name": name, "arguments": args}],
                                 "probe": True, "offered": [t["function"]["name"] for t in PROBE_TOOLS]}})
    return out


# ---- disjointness check ------------------------------------------------------------

def check():
    """The held-out nouns, domains, parameter words and tool names never occur in training's
    lexicon (lex_train.py) or its tool names (tools.py)."""
    import lex_train
    import tools as old
    train = lex_train.lexicon()
    held = lexicon()
    words = lambda lex: {w for o in lex.objects for w in o["noun"].split() + [o["domain"]]}
    pwords = lambda lex: {w for o in lex.objects for a in o["attrs"] for w in a.lstrip("*").split(":")[0].split()}
    tw, hw = words(train), words(held)
    bad = sorted(tw & hw)
    train_text = json.dumps([lex_train.OBJECTS, lex_train.ASKS, list(old.TOOLS)]).lower()
    bad_nouns = sorted(w for w in hw if re.search(r"\b%s\b" % re.escape(w), train_text))
    names = set()
    for conv in conversations(400, 11) + conversations(400, 11, 8000):
        names.update(conv["meta"]["offered"])
    r = random.Random(5)
    tnames = set()
    g = ProcGen(train, r)
    for _ in range(20000):
        tnames.add(g.new_call().tool.name)
    print("held-out objects %d, domains %d; training objects %d, domains %d" % (
        len(held.objects), len(held.by_domain), len(train.objects), len(train.by_domain)))
    print("object/domain words in both lexicons: %s" % (bad or "none"))
    print("held-out object/domain words found in the training lexicon text: %s" % (bad_nouns or "none"))
    print("held-out parameter words also in training parameters: %d of %d (%s)" % (
        len(pwords(held) & pwords(train)), len(pwords(held)), ", ".join(sorted(pwords(held) & pwords(train)))))
    print("held-out tool names %d; of them drawn in 20000 training tools: %d" % (len(names), len(names & tnames)))
    return not bad and not bad_nouns and not (names & tnames)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--long", type=int, default=0, help="tokens of context per conversation")
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        sys.exit(0 if check() else 1)
    convs = probe_conversations() if a.probe else conversations(a.n, a.seed, a.long)
    for c in convs:
        print(json.dumps(c, ensure_ascii=False))


if __name__ == "__main__":
    main()
