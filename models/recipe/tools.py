"""Tool schemas and, per tool, a maker of one call: what the user says, the
arguments the model must produce, a plausible tool result and the answer
that uses it (stdlib only).

A maker returns a dict:
  name, args        the expected call
  clauses           lower-case imperative phrases ("check the weather in Oslo")
  questions         full user sentences asking for this call alone
  result            the tool's JSON result
  answer            the final answer built from the result
  what              a short noun phrase for reasoning ("the weather in Oslo")
"""
import json


def fn(name, description, props, required):
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required}}}


def p_str(desc, enum=None):
    d = {"type": "string", "description": desc}
    if enum:
        d["enum"] = enum
    return d


def p_int(desc):
    return {"type": "integer", "description": desc}


def p_num(desc):
    return {"type": "number", "description": desc}


ASCII = str.maketrans({"ü": "u", "ö": "o", "ä": "a", "é": "e", "ñ": "n"})


def person(r, P):
    return r.choice(P.first) + " " + r.choice(P.last)


def email_of(r, P):
    name = (r.choice(P.first) + "." + r.choice(P.last)).lower().translate(ASCII)
    if r.random() < 0.3:
        name = name.split(".")[0] + str(r.randint(1, 99))
    return name + "@" + r.choice(P.domains)


def path_of(r, P):
    return r.choice(P.dirs).rstrip("/") + "/" + r.choice(P.stems) + r.choice(P.exts)


def date_of(r):
    y, m, d = r.choice([2024, 2025, 2026, 2027]), r.randint(1, 12), r.randint(1, 28)
    iso = "%04d-%02d-%02d" % (y, m, d)
    spoken = iso if r.random() < 0.6 else "%s %d, %d" % (P_MONTHS[m - 1], d, y)
    return iso, spoken


P_MONTHS = ["January", "February", "March", "April", "May", "June", "July",
            "August", "September", "October", "November", "December"]


def time_of(r):
    h, m = r.randint(6, 21), r.choice([0, 0, 15, 30, 45, 10, 20, 50])
    return "%02d:%02d" % (h, m)


def number_of(r):
    k = r.random()
    if k < 0.45:
        return r.randint(1, 999)
    if k < 0.65:
        return r.randint(1000, 250000)
    return round(r.uniform(0.5, 999), r.choice([1, 2]))


def jnum(x):
    return json.dumps(x)


def fmt(x):
    if isinstance(x, float):
        return ("%.2f" % x).rstrip("0").rstrip(".")
    return str(x)


def symbol_of(r):
    return "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(r.randint(2, 4)))


def tracking_of(r):
    pre = r.choice(["1Z", "TRK", "PKG", "JD", "LX", "RR"])
    return pre + "".join(r.choice("0123456789ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(r.randint(8, 12)))


# ---- makers ---------------------------------------------------------------

def mk_get_weather(r, P):
    city = r.choice(P.cities)
    args = {"city": city}
    unit_word = ""
    if r.random() < 0.3:
        unit = r.choice(["celsius", "fahrenheit"])
        args["unit"] = unit
        unit_word = " in " + unit.capitalize()
    unit = args.get("unit", "celsius")
    t = r.randint(-10, 35) if unit == "celsius" else r.randint(14, 95)
    cond = r.choice(["sunny", "cloudy", "partly cloudy", "rainy", "light rain", "snowy",
                     "windy", "foggy", "clear", "overcast"])
    sym = "°C" if unit == "celsius" else "°F"
    return dict(
        name="get_weather", args=args, what="the current weather in " + city,
        clauses=["check the weather in %s%s" % (city, unit_word),
                 "get the current weather for %s%s" % (city, unit_word),
                 "look up the weather in %s%s" % (city, unit_word)],
        questions=["What's the weather like in %s%s?" % (city, unit_word and " (" + unit + ")"),
                   "How is the weather in %s right now%s?" % (city, unit_word),
                   "Is it raining in %s? Tell me the temperature%s." % (city, unit_word),
                   "weather %s%s" % (city, unit_word)],
        result={"city": city, "temperature": t, "unit": unit, "condition": cond,
                "humidity": r.randint(20, 95)},
        answer=r.choice(["It is currently %d%s and %s in %s." % (t, sym, cond, city),
                         "In %s it's %s with a temperature of %d%s." % (city, cond, t, sym)]))


def mk_get_forecast(r, P):
    city, days = r.choice(P.cities), r.randint(2, 10)
    hi = [r.randint(5, 30) for _ in range(min(days, 3))]
    return dict(
        name="get_forecast", args={"city": city, "days": days},
        what="a %d-day forecast for %s" % (days, city),
        clauses=["get the %d-day forecast for %s" % (days, city),
                 "check the weather forecast in %s for the next %d days" % (city, days)],
        questions=["What will the weather be in %s over the next %d days?" % (city, days),
                   "Give me a %d day forecast for %s." % (days, city)],
        result={"city": city, "days": days, "daily_high_c": hi},
        answer="The forecast for %s starts with highs of %s°C." % (city, ", ".join(map(str, hi))))


def mk_calculate(r, P):
    a, b = number_of(r), number_of(r)
    if isinstance(a, float) or isinstance(b, float):
        a, b = r.randint(2, 9999), r.randint(2, 999)
    op = r.choice(["+", "-", "*", "/"])
    expr = "%d %s %d" % (a, op, b)
    val = {"+": a + b, "-": a - b, "*": a * b, "/": round(a / b, 4)}[op]
    return dict(
        name="calculate", args={"expression": expr}, what="the value of " + expr,
        clauses=["calculate %s" % expr, "compute %s" % expr, "work out %s" % expr],
        questions=["What is %s? Use the calculator." % expr, "Calculate %s." % expr,
                   "Can you compute %s exactly?" % expr],
        result={"expression": expr, "result": val},
        answer="%s = %s." % (expr, fmt(val)))


def mk_convert_units(r, P):
    f, t, k = r.choice([u for u in _UNITS])
    v = number_of(r)
    if f == "celsius":
        out = v * 9 / 5 + 32
    elif f == "fahrenheit":
        out = (v - 32) * 5 / 9
    else:
        out = v * k
    out = round(out, 2)
    return dict(
        name="convert_units", args={"value": v, "from_unit": f, "to_unit": t},
        what="%s %s in %s" % (fmt(v), f, t),
        clauses=["convert %s %s to %s" % (fmt(v), f, t),
                 "tell me how many %s are in %s %s" % (t, fmt(v), f)],
        questions=["How many %s is %s %s?" % (t, fmt(v), f),
                   "Convert %s %s into %s." % (fmt(v), f, t)],
        result={"value": v, "from_unit": f, "to_unit": t, "result": out},
        answer="%s %s is %s %s." % (fmt(v), f, fmt(out), t))


def mk_convert_currency(r, P):
    a, b = r.sample(P.currencies, 2)
    amt = number_of(r)
    rate = round(r.uniform(0.05, 9.0), 4)
    out = round(amt * rate, 2)
    aw = a if r.random() < 0.7 or a not in _CURWORDS else _CURWORDS[a]
    return dict(
        name="convert_currency", args={"amount": amt, "from_currency": a, "to_currency": b},
        what="%s %s in %s" % (fmt(amt), a, b),
        clauses=["convert %s %s to %s" % (fmt(amt), aw, b),
                 "tell me what %s %s is worth in %s" % (fmt(amt), aw, b)],
        questions=["How much is %s %s in %s?" % (fmt(amt), aw, b),
                   "Convert %s %s to %s please." % (fmt(amt), aw, b)],
        result={"amount": amt, "from": a, "to": b, "rate": rate, "converted": out},
        answer="%s %s is about %s %s (rate %s)." % (fmt(amt), a, fmt(out), b, rate))


def mk_web_search(r, P):
    s = r.choice(P.search)
    if s.endswith((" in", " of", " to", " near")) or s in ("best time to visit",):
        s = s + " " + r.choice(P.cities)
    args = {"query": s}
    extra = ""
    if r.random() < 0.25:
        n = r.randint(3, 10)
        args["max_results"] = n
        extra = " (top %d results)" % n
    titles = ["%s - overview" % s.capitalize(), "A guide: %s" % s]
    return dict(
        name="web_search", args=args, what="web results for \"%s\"" % s,
        clauses=["search the web for \"%s\"%s" % (s, extra), "look up \"%s\" online%s" % (s, extra)],
        questions=["Search the web for \"%s\"%s." % (s, extra),
                   "Can you google \"%s\"%s?" % (s, extra)],
        result={"query": s, "results": [{"title": t, "url": "https://%s/%d" % (r.choice(P.hosts), i)}
                                        for i, t in enumerate(titles)]},
        answer="I found %d results for \"%s\". The top one is \"%s\"." % (len(titles), s, titles[0]))


def mk_read_file(r, P):
    p = path_of(r, P)
    n = r.randint(1, 400)
    return dict(
        name="read_file", args={"path": p}, what="the contents of " + p,
        clauses=["read the file %s" % p, "open %s and show me what it says" % p],
        questions=["What's in %s?" % p, "Show me the contents of %s." % p,
                   "Read %s for me." % p],
        result={"path": p, "lines": n, "content": "# %s\n..." % p.split("/")[-1]},
        answer="%s has %d lines; it starts with a heading for %s." % (p, n, p.split("/")[-1]))


def mk_write_file(r, P):
    p = path_of(r, P)
    c = r.choice(P.bodies + P.tasks)
    return dict(
        name="write_file", args={"path": p, "content": c}, what="writing to " + p,
        clauses=["write \"%s\" to %s" % (c, p), "save the text \"%s\" in %s" % (c, p)],
        questions=["Write \"%s\" into the file %s." % (c, p),
                   "Create %s containing \"%s\"." % (p, c)],
        result={"path": p, "bytes_written": len(c.encode("utf-8")), "ok": True},
        answer="Done: %s now contains your text (%d bytes)." % (p, len(c.encode("utf-8"))))


def mk_list_directory(r, P):
    d = r.choice(P.dirs)
    files = sorted(r.sample(P.stems, 3))
    files = [f + r.choice(P.exts) for f in files]
    return dict(
        name="list_directory", args={"path": d}, what="the files in " + d,
        clauses=["list the files in %s" % d, "show me what is inside %s" % d],
        questions=["What files are in %s?" % d, "List the directory %s." % d],
        result={"path": d, "entries": files},
        answer="%s contains %s." % (d, ", ".join(files)))


def mk_run_shell(r, P):
    c = r.choice(P.commands)
    return dict(
        name="run_shell", args={"command": c}, what="the output of `%s`" % c,
        clauses=["run `%s`" % c, "execute the command `%s`" % c],
        questions=["Run `%s` in the shell." % c, "Please execute `%s` and tell me the output." % c],
        result={"command": c, "exit_code": 0, "stdout": "ok"},
        answer="`%s` finished with exit code 0 and printed \"ok\"." % c)


def mk_create_event(r, P):
    title = r.choice(P.events)
    if title.endswith((" with", " for", " to")):
        title += " " + (r.choice(P.first) if "Flight" not in title else r.choice(P.cities))
    iso, spoken = date_of(r)
    tm = time_of(r)
    args = {"title": title, "date": iso, "time": tm}
    extra = ""
    if r.random() < 0.35:
        dur = r.choice([15, 30, 45, 60, 90, 120])
        args["duration_minutes"] = dur
        extra = " for %d minutes" % dur
    return dict(
        name="create_calendar_event", args=args,
        what="a calendar event \"%s\" on %s at %s" % (title, iso, tm),
        clauses=["add \"%s\" to my calendar on %s at %s%s" % (title, spoken, tm, extra),
                 "schedule \"%s\" for %s at %s%s" % (title, spoken, tm, extra)],
        questions=["Put \"%s\" in my calendar on %s at %s%s." % (title, spoken, tm, extra),
                   "Create a calendar event called \"%s\" on %s at %s%s." % (title, spoken, tm, extra)],
        result={"id": "evt_%d" % r.randint(1000, 99999), "title": title, "date": iso, "time": tm,
                "status": "created"},
        answer="I added \"%s\" to your calendar on %s at %s." % (title, iso, tm))


def mk_list_events(r, P):
    iso, spoken = date_of(r)
    evs = [r.choice(P.events).replace(" with", "").replace(" for", "").replace(" to", "")
           for _ in range(r.randint(0, 2))]
    ans = ("You have nothing scheduled on %s." % iso if not evs else
           "On %s you have: %s." % (iso, "; ".join(evs)))
    return dict(
        name="list_calendar_events", args={"date": iso}, what="your events on " + iso,
        clauses=["check my calendar for %s" % spoken, "list my events on %s" % spoken],
        questions=["What do I have on %s?" % spoken, "Am I free on %s?" % spoken],
        result={"date": iso, "events": evs}, answer=ans)


def mk_send_email(r, P):
    to, sub, body = email_of(r, P), r.choice(P.subjects), r.choice(P.bodies)
    return dict(
        name="send_email", args={"to": to, "subject": sub, "body": body},
        what="an email to " + to,
        clauses=["email %s with the subject \"%s\" saying \"%s\"" % (to, sub, body),
                 "send an email to %s, subject \"%s\", body \"%s\"" % (to, sub, body)],
        questions=["Send an email to %s with subject \"%s\" and the message \"%s\"" % (to, sub, body),
                   "Email %s: subject \"%s\", text \"%s\"" % (to, sub, body)],
        result={"status": "sent", "to": to, "message_id": "msg_%d" % r.randint(10000, 999999)},
        answer="Your email \"%s\" was sent to %s." % (sub, to))


def mk_search_email(r, P):
    q = r.choice([r.choice(P.subjects), person(r, P), r.choice(P.topics)])
    n = r.randint(0, 5)
    return dict(
        name="search_email", args={"query": q}, what="emails about \"%s\"" % q,
        clauses=["search my inbox for \"%s\"" % q, "find emails about \"%s\"" % q],
        questions=["Do I have any emails about \"%s\"?" % q, "Search my email for \"%s\"." % q],
        result={"query": q, "matches": n},
        answer=("No emails match \"%s\"." % q if n == 0 else
                "I found %d email%s matching \"%s\"." % (n, "" if n == 1 else "s", q)))


def mk_get_time(r, P):
    tz = r.choice(P.timezones)
    tm = time_of(r)
    return dict(
        name="get_current_time", args={"timezone": tz}, what="the time in " + tz,
        clauses=["tell me the current time in %s" % tz, "check what time it is in %s" % tz],
        questions=["What time is it in %s?" % tz, "Current time in the %s time zone?" % tz],
        result={"timezone": tz, "time": tm},
        answer="It is %s in %s." % (tm, tz))


def mk_convert_tz(r, P):
    a, b = r.sample(P.timezones, 2)
    tm = time_of(r)
    out = "%02d:%s" % ((int(tm[:2]) + r.randint(1, 12)) % 24, tm[3:])
    return dict(
        name="convert_timezone", args={"time": tm, "from_timezone": a, "to_timezone": b},
        what="%s %s in %s" % (tm, a, b),
        clauses=["convert %s from %s to %s" % (tm, a, b),
                 "tell me what %s in %s is in %s" % (tm, a, b)],
        questions=["If it's %s in %s, what time is it in %s?" % (tm, a, b),
                   "Convert %s %s to %s time." % (tm, a, b)],
        result={"time": tm, "from": a, "to": b, "converted": out},
        answer="%s in %s is %s in %s." % (tm, a, out, b))


def mk_stock(r, P):
    s = symbol_of(r)
    price = round(r.uniform(3, 900), 2)
    return dict(
        name="get_stock_price", args={"symbol": s}, what="the price of " + s,
        clauses=["get the stock price of %s" % s, "check how %s is trading" % s],
        questions=["What's the current price of %s stock?" % s, "How much is %s trading at?" % s],
        result={"symbol": s, "price": price, "currency": "USD"},
        answer="%s is trading at %s USD." % (s, fmt(price)))


def mk_translate(r, P):
    t, lang = r.choice(P.phrases), r.choice(P.languages)
    return dict(
        name="translate_text", args={"text": t, "target_language": lang},
        what="\"%s\" in %s" % (t, lang),
        clauses=["translate \"%s\" into %s" % (t, lang), "say \"%s\" in %s" % (t, lang)],
        questions=["How do you say \"%s\" in %s?" % (t, lang),
                   "Translate \"%s\" to %s." % (t, lang)],
        result={"translation": "[%s] %s" % (lang, t), "target_language": lang},
        answer="In %s: [%s] %s" % (lang, lang, t))


def mk_reminder(r, P):
    task = r.choice(P.tasks)
    iso, spoken = date_of(r)
    tm = time_of(r)
    return dict(
        name="set_reminder", args={"message": task, "datetime": iso + "T" + tm},
        what="a reminder to " + task,
        clauses=["remind me to %s on %s at %s" % (task, spoken, tm),
                 "set a reminder on %s at %s to %s" % (spoken, tm, task)],
        questions=["Remind me to %s on %s at %s." % (task, spoken, tm),
                   "Please set a reminder for %s at %s: %s." % (spoken, tm, task)],
        result={"status": "scheduled", "datetime": iso + "T" + tm},
        answer="OK, I'll remind you to %s on %s at %s." % (task, iso, tm))


def mk_news(r, P):
    t = r.choice(P.topics)
    return dict(
        name="get_news", args={"topic": t}, what="news about " + t,
        clauses=["get the latest news about %s" % t, "find recent headlines on %s" % t],
        questions=["What's new with %s?" % t, "Any news about %s today?" % t],
        result={"topic": t, "headlines": ["New report on %s published" % t,
                                          "Experts discuss %s" % t]},
        answer="Top headline on %s: \"New report on %s published\"." % (t, t))


def mk_contacts(r, P):
    n = person(r, P)
    ph = "+%d %d %07d" % (r.randint(1, 99), r.randint(10, 999), r.randint(0, 9999999))
    return dict(
        name="search_contacts", args={"name": n}, what="the contact details of " + n,
        clauses=["look up %s in my contacts" % n, "find the phone number of %s" % n],
        questions=["What is %s's phone number?" % n, "Find %s in my address book." % n],
        result={"name": n, "phone": ph},
        answer="%s's number is %s." % (n, ph))


def mk_send_message(r, P):
    n, body = person(r, P), r.choice(P.bodies)
    return dict(
        name="send_message", args={"recipient": n, "text": body}, what="a message to " + n,
        clauses=["text %s \"%s\"" % (n, body), "send %s the message \"%s\"" % (n, body)],
        questions=["Send a message to %s saying \"%s\"" % (n, body),
                   "Text %s: \"%s\"" % (n, body)],
        result={"status": "delivered", "recipient": n},
        answer="Message delivered to %s." % n)


def mk_directions(r, P):
    a, b = r.sample(P.cities, 2)
    mode = r.choice(["driving", "walking", "transit", "cycling"])
    km = r.randint(2, 900)
    return dict(
        name="get_directions", args={"origin": a, "destination": b, "mode": mode},
        what="%s directions from %s to %s" % (mode, a, b),
        clauses=["get %s directions from %s to %s" % (mode, a, b),
                 "find the %s route from %s to %s" % (mode, a, b)],
        questions=["How do I get from %s to %s by %s?" % (a, b, {"driving": "car", "walking": "foot",
                                                                 "transit": "public transit",
                                                                 "cycling": "bike"}[mode]),
                   "Directions from %s to %s, %s please." % (a, b, mode)],
        result={"origin": a, "destination": b, "mode": mode, "distance_km": km},
        answer="The %s route from %s to %s is about %d km." % (mode, a, b, km))


def mk_restaurants(r, P):
    c, cu = r.choice(P.cities), r.choice(P.cuisines)
    name = r.choice(["The Golden", "Little", "Casa", "Blue", "Old Town", "Green"]) + " " + \
        r.choice(["Spoon", "Garden", "Table", "Kitchen", "Lantern", "Corner"])
    return dict(
        name="find_restaurants", args={"location": c, "cuisine": cu},
        what="%s restaurants in %s" % (cu, c),
        clauses=["find %s restaurants in %s" % (cu, c), "look for a good %s place in %s" % (cu, c)],
        questions=["Where can I eat %s food in %s?" % (cu, c),
                   "Recommend a %s restaurant in %s." % (cu, c)],
        result={"results": [{"name": name, "rating": round(r.uniform(3.5, 5), 1)}]},
        answer="Try %s, a %s restaurant in %s." % (name, cu, c))


def mk_flights(r, P):
    a, b = r.sample(P.cities, 2)
    iso, spoken = date_of(r)
    price = r.randint(60, 1500)
    return dict(
        name="search_flights", args={"origin": a, "destination": b, "date": iso},
        what="flights from %s to %s on %s" % (a, b, iso),
        clauses=["search flights from %s to %s on %s" % (a, b, spoken),
                 "find me a flight from %s to %s on %s" % (a, b, spoken)],
        questions=["Are there flights from %s to %s on %s?" % (a, b, spoken),
                   "Find flights %s to %s, %s." % (a, b, spoken)],
        result={"flights": [{"flight": "XY%d" % r.randint(100, 9999), "price_usd": price}]},
        answer="The cheapest flight from %s to %s on %s costs %d USD." % (a, b, iso, price))


def mk_hotels(r, P):
    c = r.choice(P.cities)
    i1, s1 = date_of(r)
    y, m, d = map(int, i1.split("-"))
    nights = r.randint(1, 7)
    d2 = min(d + nights, 28) if d + nights <= 28 else d + nights - 28
    m2, y2 = (m, y) if d + nights <= 28 else (m % 12 + 1, y + (m == 12))
    i2 = "%04d-%02d-%02d" % (y2, m2, d2)
    s2 = i2 if s1 == i1 else "%s %d, %d" % (P_MONTHS[m2 - 1], d2, y2)
    g = r.randint(1, 4)
    return dict(
        name="search_hotels", args={"city": c, "check_in": i1, "check_out": i2, "guests": g},
        what="hotels in %s from %s to %s" % (c, i1, i2),
        clauses=["find a hotel in %s from %s to %s for %d guest%s" % (c, s1, s2, g, "s" * (g > 1)),
                 "search hotels in %s, check-in %s, check-out %s, %d guest%s" % (c, s1, s2, g, "s" * (g > 1))],
        questions=["I need a hotel in %s from %s to %s for %d %s." % (c, s1, s2, g, "people" if g > 1 else "person")],
        result={"hotels": [{"name": "Hotel %s Central" % c, "price_per_night": r.randint(50, 400)}]},
        answer="Hotel %s Central has rooms from %s to %s." % (c, i1, i2))


def mk_todo(r, P):
    t = r.choice(P.tasks)
    args = {"task": t}
    extra = ""
    if r.random() < 0.4:
        iso, spoken = date_of(r)
        args["due_date"] = iso
        extra = " by %s" % spoken
    return dict(
        name="create_todo", args=args, what="a to-do item \"%s\"" % t,
        clauses=["add \"%s\" to my to-do list%s" % (t, extra), "create a task to %s%s" % (t, extra)],
        questions=["Add \"%s\" to my todo list%s." % (t, extra), "New task: %s%s." % (t, extra)],
        result={"id": r.randint(1, 999), "task": t, "status": "open"},
        answer="Added \"%s\" to your to-do list." % t)


def mk_music(r, P):
    s = r.choice(P.songs)
    return dict(
        name="play_music", args={"query": s}, what="playing " + s,
        clauses=["play %s" % s, "put on some %s" % s],
        questions=["Play %s." % s, "Can you put on %s?" % s],
        result={"playing": s, "status": "ok"}, answer="Now playing %s." % s)


def mk_timer(r, P):
    m = r.choice([1, 2, 3, 5, 7, 10, 12, 15, 20, 25, 30, 40, 45, 60, 90])
    return dict(
        name="set_timer", args={"minutes": m}, what="a %d-minute timer" % m,
        clauses=["set a timer for %d minutes" % m, "start a %d minute timer" % m],
        questions=["Set a timer for %d minutes." % m, "Timer, %d minutes please." % m],
        result={"status": "running", "minutes": m}, answer="Your %d-minute timer is running." % m)


def mk_define(r, P):
    w = r.choice(P.words)
    return dict(
        name="define_word", args={"word": w}, what="the meaning of " + w,
        clauses=["look up the definition of \"%s\"" % w, "define the word \"%s\"" % w],
        questions=["What does \"%s\" mean?" % w, "Define %s." % w],
        result={"word": w, "definition": "a word whose dictionary entry is here"},
        answer="\"%s\": a word whose dictionary entry is here." % w)


def mk_package(r, P):
    t = tracking_of(r)
    st = r.choice(["in transit", "out for delivery", "delivered", "at the depot"])
    return dict(
        name="track_package", args={"tracking_number": t}, what="the status of package " + t,
        clauses=["track the package %s" % t, "check where my parcel %s is" % t],
        questions=["Where is my package %s?" % t, "Track %s." % t],
        result={"tracking_number": t, "status": st}, answer="Package %s is %s." % (t, st))


def mk_http_get(r, P):
    u = "https://" + r.choice(P.hosts) + r.choice(P.url_paths)
    code = r.choice([200, 200, 200, 404, 503])
    return dict(
        name="http_get", args={"url": u}, what="fetching " + u,
        clauses=["fetch %s" % u, "make a GET request to %s" % u],
        questions=["What does %s return?" % u, "Fetch %s for me." % u],
        result={"url": u, "status": code, "body": "..."},
        answer="%s answered with HTTP status %d." % (u, code))


def mk_sql(r, P):
    t = r.choice(P.tables)
    k = r.random()
    if k < 0.4:
        q = "SELECT COUNT(*) FROM %s" % t
    elif k < 0.7:
        q = "SELECT * FROM %s LIMIT %d" % (t, r.randint(1, 50))
    else:
        q = "SELECT * FROM %s WHERE id = %d" % (t, r.randint(1, 99999))
    n = r.randint(0, 5000)
    return dict(
        name="query_database", args={"sql": q}, what="the result of the query on " + t,
        clauses=["run the SQL query `%s`" % q, "query the database with `%s`" % q],
        questions=["Run this query: `%s`" % q, "Execute `%s` on the database." % q],
        result={"rows": n if "COUNT" in q else min(n, 3)},
        answer="The query returned %d row%s." % (n if "COUNT" in q else min(n, 3),
                                                   "" if (n if "COUNT" in q else min(n, 3)) == 1 else "s"))


_UNITS = [("kilometers", "miles", 0.621371), ("miles", "kilometers", 1.609344),
          ("kilograms", "pounds", 2.204623), ("pounds", "kilograms", 0.453592),
          ("meters", "feet", 3.28084), ("feet", "meters", 0.3048),
          ("liters", "gallons", 0.264172), ("gallons", "liters", 3.785412),
          ("centimeters", "inches", 0.393701), ("inches", "centimeters", 2.54),
          ("grams", "ounces", 0.035274), ("ounces", "grams", 28.349523),
          ("celsius", "fahrenheit", None), ("fahrenheit", "celsius", None),
          ("hours", "minutes", 60.0), ("gigabytes", "megabytes", 1000.0)]
_CURWORDS = {"USD": "US dollars", "EUR": "euros", "GBP": "British pounds",
             "JPY": "Japanese yen", "CHF": "Swiss francs", "CAD": "Canadian dollars"}

# ---- schemas --------------------------------------------------------------

TOOLS = {
    "get_weather": (fn("get_weather", "Get the current weather for a city.", {
        "city": p_str("City name, e.g. Paris"),
        "unit": p_str("Temperature unit", ["celsius", "fahrenheit"])}, ["city"]), mk_get_weather,
        "the weather"),
    "get_forecast": (fn("get_forecast", "Get a daily weather forecast for a city.", {
        "city": p_str("City name"), "days": p_int("Number of days, 1 to 14")}, ["city", "days"]),
        mk_get_forecast, "weather forecasts"),
    "calculate": (fn("calculate", "Evaluate an arithmetic expression exactly.", {
        "expression": p_str("Expression such as 12 * 7")}, ["expression"]), mk_calculate,
        "exact calculations"),
    "convert_units": (fn("convert_units", "Convert a value between units of measure.", {
        "value": p_num("The value to convert"), "from_unit": p_str("Unit of the value"),
        "to_unit": p_str("Target unit")}, ["value", "from_unit", "to_unit"]), mk_convert_units,
        "unit conversion"),
    "convert_currency": (fn("convert_currency", "Convert money between currencies at today's rate.", {
        "amount": p_num("Amount of money"), "from_currency": p_str("ISO code, e.g. USD"),
        "to_currency": p_str("ISO code, e.g. EUR")}, ["amount", "from_currency", "to_currency"]),
        mk_convert_currency, "currency conversion"),
    "web_search": (fn("web_search", "Search the web and return the top results.", {
        "query": p_str("Search query"), "max_results": p_int("How many results to return")},
        ["query"]), mk_web_search, "web search"),
    "read_file": (fn("read_file", "Read a text file from disk.", {
        "path": p_str("Path of the file")}, ["path"]), mk_read_file, "reading files"),
    "write_file": (fn("write_file", "Write text to a file, replacing its contents.", {
        "path": p_str("Path of the file"), "content": p_str("Text to write")}, ["path", "content"]),
        mk_write_file, "writing files"),
    "list_directory": (fn("list_directory", "List the entries of a directory.", {
        "path": p_str("Directory path")}, ["path"]), mk_list_directory, "listing directories"),
    "run_shell": (fn("run_shell", "Run a shell command and return its output.", {
        "command": p_str("The command line")}, ["command"]), mk_run_shell, "running shell commands"),
    "create_calendar_event": (fn("create_calendar_event", "Create an event in the user's calendar.", {
        "title": p_str("Event title"), "date": p_str("Date as YYYY-MM-DD"),
        "time": p_str("Start time as HH:MM, 24-hour"),
        "duration_minutes": p_int("Length of the event in minutes")}, ["title", "date", "time"]),
        mk_create_event, "creating calendar events"),
    "list_calendar_events": (fn("list_calendar_events", "List the user's calendar events on a date.", {
        "date": p_str("Date as YYYY-MM-DD")}, ["date"]), mk_list_events, "reading the calendar"),
    "send_email": (fn("send_email", "Send an email.", {
        "to": p_str("Recipient address"), "subject": p_str("Subject line"),
        "body": p_str("Message text")}, ["to", "subject", "body"]), mk_send_email, "sending email"),
    "search_email": (fn("search_email", "Search the user's mailbox.", {
        "query": p_str("Words to search for")}, ["query"]), mk_search_email, "searching email"),
    "get_current_time": (fn("get_current_time", "Get the current local time in a time zone.", {
        "timezone": p_str("IANA time zone, e.g. Europe/Paris")}, ["timezone"]), mk_get_time,
        "telling the time"),
    "convert_timezone": (fn("convert_timezone", "Convert a clock time from one time zone to another.", {
        "time": p_str("Time as HH:MM"), "from_timezone": p_str("IANA time zone of the time"),
        "to_timezone": p_str("IANA time zone to convert to")}, ["time", "from_timezone", "to_timezone"]),
        mk_convert_tz, "time zone conversion"),
    "get_stock_price": (fn("get_stock_price", "Get the latest price of a stock.", {
        "symbol": p_str("Ticker symbol")}, ["symbol"]), mk_stock, "stock prices"),
    "translate_text": (fn("translate_text", "Translate text into another language.", {
        "text": p_str("Text to translate"), "target_language": p_str("Language name, e.g. French")},
        ["text", "target_language"]), mk_translate, "translation"),
    "set_reminder": (fn("set_reminder", "Set a reminder at a date and time.", {
        "message": p_str("What to remind about"), "datetime": p_str("When, as YYYY-MM-DDTHH:MM")},
        ["message", "datetime"]), mk_reminder, "reminders"),
    "get_news": (fn("get_news", "Get recent news headlines on a topic.", {
        "topic": p_str("News topic")}, ["topic"]), mk_news, "news"),
    "search_contacts": (fn("search_contacts", "Find a person in the user's contacts.", {
        "name": p_str("Full name")}, ["name"]), mk_contacts, "looking up contacts"),
    "send_message": (fn("send_message", "Send a chat message to a contact.", {
        "recipient": p_str("Contact name"), "text": p_str("Message text")}, ["recipient", "text"]),
        mk_send_message, "sending messages"),
    "get_directions": (fn("get_directions", "Get a route between two places.", {
        "origin": p_str("Start"), "destination": p_str("End"),
        "mode": p_str("Travel mode", ["driving", "walking", "transit", "cycling"])},
        ["origin", "destination", "mode"]), mk_directions, "directions"),
    "find_restaurants": (fn("find_restaurants", "Find restaurants near a place.", {
        "location": p_str("City or area"), "cuisine": p_str("Kind of food")}, ["location", "cuisine"]),
        mk_restaurants, "finding restaurants"),
    "search_flights": (fn("search_flights", "Search for flights on a date.", {
        "origin": p_str("Departure city"), "destination": p_str("Arrival city"),
        "date": p_str("Date as YYYY-MM-DD")}, ["origin", "destination", "date"]), mk_flights,
        "flight search"),
    "search_hotels": (fn("search_hotels", "Search hotels with free rooms.", {
        "city": p_str("City"), "check_in": p_str("Date as YYYY-MM-DD"),
        "check_out": p_str("Date as YYYY-MM-DD"), "guests": p_int("Number of guests")},
        ["city", "check_in", "check_out", "guests"]), mk_hotels, "hotel search"),
    "create_todo": (fn("create_todo", "Add an item to the user's to-do list.", {
        "task": p_str("What to do"), "due_date": p_str("Due date as YYYY-MM-DD")}, ["task"]),
        mk_todo, "to-do lists"),
    "play_music": (fn("play_music", "Play a song, artist or playlist.", {
        "query": p_str("What to play")}, ["query"]), mk_music, "playing music"),
    "set_timer": (fn("set_timer", "Start a countdown timer.", {
        "minutes": p_int("Length in minutes")}, ["minutes"]), mk_timer, "timers"),
    "define_word": (fn("define_word", "Look up the dictionary definition of an English word.", {
        "word": p_str("The word")}, ["word"]), mk_define, "dictionary look-ups"),
    "track_package": (fn("track_package", "Track a parcel by its tracking number.", {
        "tracking_number": p_str("Tracking number")}, ["tracking_number"]), mk_package,
        "package tracking"),
    "http_get": (fn("http_get", "Fetch a URL with an HTTP GET request.", {
        "url": p_str("Absolute URL")}, ["url"]), mk_http_get, "fetching web pages"),
    "query_database": (fn("query_database", "Run a read-only SQL query.", {
        "sql": p_str("SQL statement")}, ["sql"]), mk_sql, "database queries"),
}

TOOL_NAMES = sorted(TOOLS)


# ---- schema variants (--schema-variety) ---------------------------------------
# Clients describe the same tool in their own words.  A model that has only ever seen
# one text per tool learns to match that text, and refuses a get_weather whose
# description lost its final period.  Variants keep the name, the meaning and every
# property the call uses; they change punctuation and case, drop examples and
# property descriptions, and drop optional properties the call does not use.

def _vary_text(r, text):
    k = r.random()
    if k < 0.3:
        return text.rstrip(".")
    if k < 0.4:
        return text[:1].lower() + text[1:]
    if k < 0.5 and "," in text:
        return text.split(",")[0].rstrip(".")
    return text


def schema_variant(r, schema, used, bare=0.0):
    """A copy of schema (fn() shape) reworded; used: the argument names the call fills;
    bare: chance that the function loses its description (clients that send only names)."""
    f = schema["function"]
    props = {}
    for name, p in f["parameters"]["properties"].items():
        if name not in used and name not in f["parameters"]["required"] and r.random() < 0.5:
            continue
        p = dict(p)
        k = r.random()
        if k < 0.15:
            del p["description"]
        elif k < 0.6:
            p["description"] = _vary_text(r, p["description"].split(", e.g.")[0]
                                          if r.random() < 0.5 else p["description"])
        props[name] = p
    params = {"type": "object", "properties": props,
              "required": [n for n in f["parameters"]["required"] if n in props]}
    if r.random() < 0.1:
        del params["required"]
    out = {"name": f["name"], "description": _vary_text(r, f["description"]), "parameters": params}
    if bare and r.random() < bare:
        del out["description"]
    return {"type": "function", "function": out}
