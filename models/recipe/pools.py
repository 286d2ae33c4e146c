"""Value pools for the conversation generator (stdlib only).

Every pool is split once, by a stable hash of each value, into a training
part and a held-out part used only for evaluation, so the evaluation asks
the model to copy values it never saw during training.
"""
import zlib

CITIES = [
    "Paris", "London", "Berlin", "Madrid", "Rome", "Lisbon", "Vienna", "Prague",
    "Warsaw", "Budapest", "Dublin", "Oslo", "Stockholm", "Helsinki", "Copenhagen",
    "Amsterdam", "Brussels", "Zurich", "Geneva", "Munich", "Hamburg", "Milan",
    "Naples", "Barcelona", "Valencia", "Seville", "Porto", "Athens", "Istanbul",
    "Ankara", "Cairo", "Nairobi", "Lagos", "Accra", "Casablanca", "Tunis",
    "Johannesburg", "Cape Town", "Addis Ababa", "Dakar", "Tokyo", "Osaka", "Kyoto",
    "Seoul", "Busan", "Beijing", "Shanghai", "Shenzhen", "Hong Kong", "Taipei",
    "Singapore", "Bangkok", "Hanoi", "Ho Chi Minh City", "Manila", "Jakarta",
    "Kuala Lumpur", "Mumbai", "New Delhi", "Bangalore", "Chennai", "Kolkata",
    "Karachi", "Lahore", "Dhaka", "Kathmandu", "Colombo", "Dubai", "Abu Dhabi",
    "Doha", "Riyadh", "Tehran", "Baghdad", "Tel Aviv", "Amman", "Beirut",
    "Sydney", "Melbourne", "Brisbane", "Perth", "Adelaide", "Auckland",
    "Wellington", "New York", "Los Angeles", "Chicago", "Houston", "Phoenix",
    "Philadelphia", "San Antonio", "San Diego", "Dallas", "San Francisco",
    "Seattle", "Denver", "Boston", "Miami", "Atlanta", "Portland", "Las Vegas",
    "Detroit", "Minneapolis", "New Orleans", "Toronto", "Montreal", "Vancouver",
    "Calgary", "Ottawa", "Mexico City", "Guadalajara", "Monterrey", "Havana",
    "Bogota", "Medellin", "Lima", "Quito", "Santiago", "Buenos Aires",
    "Montevideo", "Sao Paulo", "Rio de Janeiro", "Brasilia", "Caracas",
    "Reykjavik", "Edinburgh", "Glasgow", "Manchester", "Liverpool", "Bristol",
    "Lyon", "Marseille", "Nice", "Bordeaux", "Toulouse", "Florence", "Venice",
    "Turin", "Krakow", "Gdansk", "Riga", "Tallinn", "Vilnius", "Kyiv", "Minsk",
    "Bucharest", "Sofia", "Belgrade", "Zagreb", "Ljubljana", "Sarajevo",
    "Tbilisi", "Yerevan", "Baku", "Almaty", "Tashkent", "Ulaanbaatar",
    "Vladivostok", "Anchorage", "Honolulu", "Salt Lake City", "Kansas City",
    "St. Louis", "Pittsburgh", "Cleveland", "Nashville", "Austin", "Sacramento",
    "Oakland", "San Jose", "Tampa", "Orlando", "Charlotte", "Raleigh",
    "Quebec City", "Halifax", "Winnipeg", "Edmonton", "Marrakesh", "Zanzibar",
    "Kigali", "Kampala", "Lusaka", "Harare", "Windhoek", "Luanda", "Maputo",
]

FIRST_NAMES = [
    "Anna", "Ben", "Carla", "David", "Elena", "Felix", "Grace", "Hugo", "Iris",
    "Jonas", "Karin", "Liam", "Maya", "Noah", "Olga", "Pablo", "Quinn", "Rosa",
    "Samuel", "Tara", "Umar", "Vera", "Walter", "Ximena", "Yusuf", "Zoe",
    "Aisha", "Bruno", "Chen", "Dmitri", "Emma", "Farid", "Greta", "Hiroshi",
    "Ingrid", "Jamal", "Keiko", "Lucas", "Mei", "Nadia", "Oscar", "Priya",
    "Rafael", "Sofia", "Tomas", "Uma", "Victor", "Wen", "Yara", "Zain",
    "Alice", "Marco", "Julia", "Pedro", "Hannah", "Ravi", "Leila", "Oliver",
    "Fatima", "George", "Sara", "Ahmed", "Laura", "Kenji", "Nina", "Mateo",
]

LAST_NAMES = [
    "Smith", "Garcia", "Müller", "Rossi", "Kowalski", "Novak", "Tanaka", "Kim",
    "Nguyen", "Patel", "Singh", "Okafor", "Mensah", "Silva", "Santos", "Dubois",
    "Martin", "Bernard", "Jensen", "Larsen", "Nielsen", "Berg", "Lindqvist",
    "Ivanova", "Petrov", "Horvat", "Popescu", "Yilmaz", "Haddad", "Cohen",
    "Khan", "Ali", "Chen", "Wang", "Li", "Zhang", "Sato", "Suzuki", "Park",
    "Lee", "Brown", "Johnson", "Miller", "Davis", "Wilson", "Anderson", "Taylor",
    "Thomas", "Moore", "Jackson", "White", "Harris", "Clark", "Lewis", "Walker",
    "Young", "King", "Wright", "Lopez", "Hill", "Scott", "Green", "Adams",
    "Baker", "Nelson", "Carter", "Mitchell", "Perez", "Roberts", "Turner",
]

DOMAINS = ["example.com", "example.org", "mail.test", "corp.example", "acme.test",
           "uni.example.edu", "startup.io", "team.example.net", "home.example"]

DIRS = [
    "/home/user", "/home/user/docs", "/home/user/projects/app", "/var/log",
    "/etc/nginx", "/tmp", "/srv/data", "/opt/tools", "/home/user/notes",
    "/home/user/photos/2024", "/data/reports", "/usr/local/share", "src",
    "docs", "notes", "reports/q3", "config", "scripts", "build/out",
    "/mnt/backup", "/home/dev/work", "/var/www/html", "assets/img", "tests/unit",
]
FILE_STEMS = [
    "notes", "todo", "report", "budget", "main", "config", "readme", "index",
    "data", "results", "summary", "draft", "invoice_2024", "meeting-minutes",
    "server", "access", "error", "deploy", "backup", "inventory", "plan",
    "letter", "schedule", "contacts", "recipes", "changelog", "app", "utils",
    "settings", "export_01", "q3_sales", "list", "journal", "ideas", "log",
]
FILE_EXTS = [".txt", ".md", ".py", ".json", ".csv", ".log", ".conf", ".yaml",
             ".c", ".sh", ".html", ".toml", ".js", ".ini"]

TIMEZONES = [
    "Europe/London", "Europe/Paris", "Europe/Berlin", "Europe/Madrid",
    "Europe/Rome", "Europe/Moscow", "Europe/Istanbul", "Europe/Athens",
    "Europe/Lisbon", "Europe/Warsaw", "Europe/Stockholm", "Europe/Dublin",
    "America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
    "America/Toronto", "America/Vancouver", "America/Mexico_City",
    "America/Sao_Paulo", "America/Buenos_Aires", "America/Bogota", "America/Lima",
    "America/Anchorage", "Pacific/Honolulu", "Pacific/Auckland", "Asia/Tokyo",
    "Asia/Seoul", "Asia/Shanghai", "Asia/Hong_Kong", "Asia/Singapore",
    "Asia/Kolkata", "Asia/Dubai", "Asia/Bangkok", "Asia/Jakarta", "Asia/Karachi",
    "Asia/Dhaka", "Asia/Tehran", "Asia/Jerusalem", "Asia/Manila", "Africa/Cairo",
    "Africa/Lagos", "Africa/Nairobi", "Africa/Johannesburg", "Africa/Casablanca",
    "Australia/Sydney", "Australia/Melbourne", "Australia/Perth",
    "Australia/Brisbane", "Atlantic/Reykjavik", "UTC",
]

LANGUAGES = [
    "French", "German", "Spanish", "Italian", "Portuguese", "Dutch", "Swedish",
    "Norwegian", "Danish", "Finnish", "Polish", "Czech", "Greek", "Turkish",
    "Russian", "Ukrainian", "Arabic", "Hebrew", "Hindi", "Bengali", "Japanese",
    "Korean", "Chinese", "Vietnamese", "Thai", "Indonesian", "Swahili",
    "Romanian", "Hungarian", "Croatian",
]

CUISINES = [
    "Italian", "Japanese", "Mexican", "Indian", "Thai", "Chinese", "French",
    "Greek", "Lebanese", "Korean", "Vietnamese", "Ethiopian", "Spanish",
    "Turkish", "Peruvian", "vegan", "vegetarian", "seafood", "barbecue",
    "sushi", "pizza", "ramen", "tapas", "dim sum", "burger",
]

TOPICS = [
    "climate change", "electric cars", "space exploration", "football",
    "the stock market", "artificial intelligence", "renewable energy",
    "the Olympics", "quantum computing", "public health", "housing prices",
    "cybersecurity", "tennis", "jazz festivals", "film awards", "local elections",
    "ocean research", "cryptocurrency", "video games", "aviation",
    "archaeology", "robotics", "nutrition", "chess", "wildlife conservation",
    "mobile phones", "the music industry", "marathon running", "urban planning",
    "open source software", "volcanoes", "coffee prices", "semiconductors",
]

SEARCH_SUBJECTS = [
    "how to bake sourdough bread", "best hiking trails near", "history of",
    "cheap flights to", "how to fix a leaking tap", "symptoms of the flu",
    "python list comprehension examples", "nginx reverse proxy config",
    "how tall is Mount Everest", "rules of cricket", "how to learn guitar",
    "population of", "best time to visit", "train schedule to",
    "how to write a cover letter", "recipe for lentil soup", "meaning of stoicism",
    "how to change a bike tire", "tallest buildings in", "museums in",
    "how does a heat pump work", "c pointer arithmetic tutorial",
    "linux find command examples", "how to grow tomatoes", "weather radar",
    "used bicycles for sale in", "how to make cold brew coffee",
    "git rebase vs merge", "sql join types explained", "marathon training plan",
]

EVENT_TITLES = [
    "Team standup", "Dentist appointment", "Lunch with", "Project review",
    "Quarterly budget review", "Yoga class", "Call with", "Doctor visit",
    "Code review", "Birthday party for", "Flight to", "Parent-teacher meeting",
    "Sprint planning", "Coffee with", "Board meeting", "Gym session",
    "Interview with", "Car service", "Book club", "Design workshop",
    "Piano lesson", "Dinner with", "Release retrospective", "Haircut",
]

EMAIL_SUBJECTS = [
    "Lunch tomorrow", "Project update", "Invoice", "Meeting notes",
    "Weekend plans", "Quick question", "Report draft", "Travel details",
    "Welcome aboard", "Budget approval", "Schedule change", "Happy birthday",
    "Contract review", "Server outage", "Thank you", "Reminder",
    "Party on Friday", "Flight booking", "New design", "Holiday request",
]

MESSAGE_BODIES = [
    "See you at noon.", "I will be ten minutes late.", "The report is ready for review.",
    "Can we move the call to Friday?", "Thanks for your help today!",
    "Please send me the slides.", "The server is back online.",
    "Dinner is at 7 pm.", "Don't forget the tickets.", "I have booked the room.",
    "Happy birthday, have a great day!", "The package arrived this morning.",
    "Let's meet at the main entrance.", "The budget was approved.",
    "I'm working from home today.", "Call me when you land.",
    "The meeting is cancelled.", "Great job on the release!",
    "Can you review my pull request?", "I left the keys at the front desk.",
    "The train is delayed by 20 minutes.", "Please water the plants.",
    "Lunch is on me tomorrow.", "The invoice is attached.",
]

PHRASES = [
    "Good morning", "Where is the train station?", "Thank you very much",
    "How much does this cost?", "I would like a coffee, please",
    "The meeting starts at nine", "See you tomorrow", "I love this city",
    "Can you help me?", "The weather is nice today", "Happy new year",
    "Where can I buy a ticket?", "My name is Anna", "I am lost",
    "The food was delicious", "Please close the door", "What time is it?",
    "I need a doctor", "Welcome to our home", "Have a safe trip",
    "The museum opens at ten", "I don't understand", "Is this seat free?",
]

SONGS = [
    "Bohemian Rhapsody", "Clair de Lune", "Take Five", "Hey Jude",
    "Yesterday", "Imagine", "Billie Jean", "Hotel California", "Dancing Queen",
    "Fly Me to the Moon", "Moonlight Sonata", "Blue in Green", "Halo",
    "Wonderwall", "Smooth Operator", "So What", "Autumn Leaves", "Rolling in the Deep",
    "lo-fi beats", "classical piano", "jazz for focus", "rain sounds",
    "80s rock", "summer hits", "Bach cello suites", "bossa nova",
]

WORDS = [
    "serendipity", "ephemeral", "ubiquitous", "eloquent", "resilient",
    "meticulous", "pragmatic", "ambiguous", "benevolent", "candid",
    "diligent", "empathy", "frugal", "gregarious", "hypothesis", "idiom",
    "juxtapose", "kinetic", "lucid", "melancholy", "nostalgia", "obsolete",
    "paradigm", "quintessential", "redundant", "skeptical", "tenacious",
    "utopia", "verbose", "whimsical", "zealous", "algorithm", "latency",
    "entropy", "catalyst", "metaphor", "anomaly", "threshold", "velocity",
]

TASKS = [
    "buy milk", "call the plumber", "renew my passport", "pay the electricity bill",
    "book a table for Friday", "send the quarterly report", "water the plants",
    "pick up the dry cleaning", "prepare the slides", "fix the login bug",
    "clean the garage", "order printer ink", "review the contract",
    "schedule a vet appointment", "back up the laptop", "return the library books",
    "update the website", "plan the team offsite", "buy a birthday gift for Mia",
    "submit the expense report", "change the car oil", "reply to Tom's email",
]

SHELL_COMMANDS = [
    "ls -la", "df -h", "uptime", "whoami", "free -m", "pwd", "date",
    "git status", "git log --oneline -5", "du -sh .", "uname -a", "ps aux",
    "cat /etc/hostname", "python3 --version", "nginx -t", "make test",
    "ls /var/log", "wc -l notes.txt", "head -n 20 server.log",
    "grep -r TODO src", "tail -n 50 /var/log/syslog", "echo hello",
    "ping -c 3 example.com", "systemctl status nginx", "docker ps",
    "npm install", "cargo build", "ls ~/Downloads", "find . -name '*.py'",
    "mkdir -p build", "tar -czf backup.tar.gz docs", "ip addr",
]

SQL_TABLES = ["users", "orders", "products", "invoices", "customers", "events",
              "payments", "employees", "sessions", "tickets", "shipments", "reviews"]

URL_HOSTS = ["example.com", "api.example.org", "status.example.net", "docs.example.io",
             "news.example.com", "weather.example.org", "shop.example.com",
             "blog.example.dev", "data.example.gov", "files.example.net"]
URL_PATHS = ["", "/status", "/api/v1/items", "/health", "/docs/intro", "/feed.xml",
             "/users/42", "/latest", "/prices", "/search?q=nginx", "/robots.txt",
             "/v2/metrics", "/about", "/releases/latest"]

COUNTRIES = [
    ("France", "Paris"), ("Germany", "Berlin"), ("Spain", "Madrid"), ("Italy", "Rome"),
    ("Portugal", "Lisbon"), ("Austria", "Vienna"), ("Poland", "Warsaw"),
    ("Ireland", "Dublin"), ("Norway", "Oslo"), ("Sweden", "Stockholm"),
    ("Finland", "Helsinki"), ("Denmark", "Copenhagen"), ("Greece", "Athens"),
    ("Japan", "Tokyo"), ("South Korea", "Seoul"), ("China", "Beijing"),
    ("India", "New Delhi"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"),
    ("Canada", "Ottawa"), ("Mexico", "Mexico City"), ("Brazil", "Brasilia"),
    ("Argentina", "Buenos Aires"), ("Peru", "Lima"), ("Chile", "Santiago"),
    ("Australia", "Canberra"), ("New Zealand", "Wellington"), ("Thailand", "Bangkok"),
    ("Vietnam", "Hanoi"), ("Turkey", "Ankara"), ("Iceland", "Reykjavik"),
    ("Hungary", "Budapest"), ("Czechia", "Prague"), ("Netherlands", "Amsterdam"),
]

CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "SEK",
              "NOK", "DKK", "PLN", "BRL", "MXN", "ZAR", "KRW", "SGD", "NZD", "TRY"]
CURRENCY_WORDS = {"USD": "US dollars", "EUR": "euros", "GBP": "British pounds",
                  "JPY": "Japanese yen", "CHF": "Swiss francs", "CAD": "Canadian dollars",
                  "AUD": "Australian dollars", "INR": "Indian rupees"}

UNITS = [  # (from, to, factor) for convert_units
    ("kilometers", "miles", 0.621371), ("miles", "kilometers", 1.609344),
    ("kilograms", "pounds", 2.204623), ("pounds", "kilograms", 0.453592),
    ("meters", "feet", 3.280840), ("feet", "meters", 0.3048),
    ("liters", "gallons", 0.264172), ("gallons", "liters", 3.785412),
    ("centimeters", "inches", 0.393701), ("inches", "centimeters", 2.54),
    ("grams", "ounces", 0.035274), ("ounces", "grams", 28.349523),
    ("celsius", "fahrenheit", None), ("fahrenheit", "celsius", None),
    ("hours", "minutes", 60.0), ("minutes", "seconds", 60.0),
    ("kilobytes", "megabytes", 0.001), ("gigabytes", "megabytes", 1000.0),
]

MONTHS = ["January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December"]

CONDITIONS = ["sunny", "cloudy", "partly cloudy", "rainy", "light rain", "snowy",
              "windy", "foggy", "stormy", "clear", "overcast", "drizzle"]


def is_heldout(value, salt=""):
    """Stable split: about one value in five is kept for evaluation only."""
    return zlib.crc32((salt + str(value)).encode("utf-8")) % 5 == 0


def split_pool(values, split, salt=""):
    held = [v for v in values if is_heldout(v, salt)]
    train = [v for v in values if not is_heldout(v, salt)]
    return held if split == "eval" else train


class Pools:
    """The pools of one split, resolved once."""

    def __init__(self, split):
        self.split = split
        s = lambda vals, salt="": split_pool(vals, split, salt)
        self.cities = s(CITIES)
        self.first = s(FIRST_NAMES, "f")
        self.last = s(LAST_NAMES, "l")
        self.dirs = s(DIRS)
        self.stems = s(FILE_STEMS)
        self.exts = FILE_EXTS
        self.timezones = s(TIMEZONES)
        self.languages = s(LANGUAGES)
        self.cuisines = s(CUISINES)
        self.topics = s(TOPICS)
        self.search = s(SEARCH_SUBJECTS)
        self.events = EVENT_TITLES
        self.subjects = s(EMAIL_SUBJECTS)
        self.bodies = s(MESSAGE_BODIES)
        self.phrases = s(PHRASES)
        self.songs = s(SONGS)
        self.words = s(WORDS)
        self.tasks = s(TASKS)
        self.commands = s(SHELL_COMMANDS)
        self.tables = SQL_TABLES
        self.hosts = URL_HOSTS
        self.url_paths = URL_PATHS
        self.countries = s(COUNTRIES, "c")
        self.currencies = CURRENCIES
        self.domains = DOMAINS


# ---- invented values (training only) ----------------------------------------
# A share of training values is invented on the fly, so the model cannot learn
# the pools by heart and has to copy arguments from the request.

ONSETS = ["b", "br", "c", "ch", "d", "dr", "f", "g", "gr", "h", "j", "k", "kr", "l", "m",
          "n", "p", "pl", "r", "s", "sh", "st", "t", "tr", "v", "w", "z", "", ""]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ia", "y"]
CODAS = ["", "", "", "n", "r", "l", "s", "m", "x", "th", "nd", "rk", "t"]


def pseudo_word(r, syl=None):
    n = syl or r.choice([1, 2, 2, 2, 3, 3])
    return "".join(r.choice(ONSETS) + r.choice(VOWELS) + r.choice(CODAS) for _ in range(n))


def pseudo_name(r):
    return pseudo_word(r).capitalize()


def pseudo_place(r):
    k = r.random()
    w = pseudo_name(r)
    if k < 0.6:
        return w
    if k < 0.8:
        return r.choice(["San ", "Port ", "New ", "Lake ", "Saint ", "Fort "]) + w
    return w + r.choice([" City", " Springs", " Bay", " Falls", " Heights"])


def pseudo_phrase(r, lo=2, hi=5):
    return " ".join(pseudo_word(r) for _ in range(r.randint(lo, hi)))


def pseudo_sentence(r):
    return pseudo_phrase(r, 2, 6).capitalize() + r.choice([".", "!", "?", "."])


def pseudo_dir(r):
    parts = [pseudo_word(r, r.randint(1, 2)) for _ in range(r.randint(1, 3))]
    return r.choice(["/home/", "/srv/", "/data/", "", "/var/", "~/"]) + "/".join(parts)


def pseudo_stem(r):
    sep = r.choice(["", "_", "-"])
    s = pseudo_word(r, r.randint(1, 2))
    if sep:
        s += sep + r.choice([pseudo_word(r, 1), str(r.randint(1, 2030))])
    return s


AUGMENT = {
    "cities": pseudo_place, "first": pseudo_name, "last": pseudo_name,
    "dirs": pseudo_dir, "stems": pseudo_stem,
    "timezones": lambda r: r.choice(["Europe", "America", "Asia", "Africa", "Pacific"]) + "/" + pseudo_name(r),
    "languages": lambda r: pseudo_name(r) + r.choice(["ish", "ese", "ian", "i"]),
    "cuisines": lambda r: pseudo_name(r) + r.choice(["", "ian", " street food"]),
    "topics": lambda r: pseudo_phrase(r, 1, 3),
    "search": lambda r: r.choice(["how to ", "what is ", "", "best "]) + pseudo_phrase(r, 1, 4),
    "subjects": lambda r: pseudo_phrase(r, 1, 3).capitalize(),
    "bodies": pseudo_sentence, "phrases": pseudo_sentence,
    "songs": lambda r: pseudo_phrase(r, 1, 3).title(),
    "words": lambda r: pseudo_word(r, r.randint(2, 4)),
    "tasks": lambda r: r.choice(["buy ", "call ", "fix ", "send ", "check ", "clean "]) + pseudo_phrase(r, 1, 3),
    "commands": lambda r: r.choice(["ls ", "cat ", "du -sh ", "wc -l ", "rm -i ", "touch "]) + pseudo_dir(r),
}


class MixPool(list):
    """A pool whose picks are replaced, with probability rate, by a fresh invented value.
    Draws come from the conversation's own generator, so output stays deterministic."""

    def __init__(self, values, r, make, rate):
        super().__init__(values)
        self.r, self.make, self.rate = r, make, rate

    def __getitem__(self, i):
        v = list.__getitem__(self, i)
        if isinstance(i, int) and self.r.random() < self.rate:
            return self.make(self.r)
        return v


class AugPools:
    """View of a Pools object whose pools mix in invented values."""

    def __init__(self, base, r, rate=0.35):
        self.base = base
        for name, make in AUGMENT.items():
            setattr(self, name, MixPool(getattr(base, name), r, make, rate))

    def __getattr__(self, name):
        return getattr(self.base, name)


# ---- more varied invented values (--variety) ---------------------------------
# Pseudo-words alone teach the model a narrow syllable style.  With --variety an
# invented value is drawn from one of three styles, so that copying token by
# token is the only thing that works on all of them:
#   pseudo   the syllable words above
#   pieces   words glued from 1-3 alphabetic pieces of the tokenizer's own vocabulary,
#            so their tokenization looks like that of unseen real words
#   chars    random letters and digits in mixed case (ids, codes, odd paths)

LETTERS = "abcdefghijklmnopqrstuvwxyz"
ALNUM = LETTERS + LETTERS.upper() + "0123456789"
_PIECES = None
_DECODED = None


def decoded_vocab():
    """The tokens of models/ngxllm-tiny/tokenizer.json as text (ByteLevel-decoded, leading
    space kept), cached; empty when the file is missing or a token is not UTF-8 alone."""
    global _DECODED
    if _DECODED is None:
        import json
        import os
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ngxllm-tiny",
                            "tokenizer.json")
        out = []
        try:
            with open(path, encoding="utf-8") as f:
                vocab = json.load(f)["model"]["vocab"]
            bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                  + list(range(ord("®"), ord("ÿ") + 1)))
            cs, n = bs[:], 0
            for b in range(256):
                if b not in bs:
                    bs.append(b)
                    cs.append(256 + n)
                    n += 1
            dec = {chr(c): b for b, c in zip(bs, cs)}
            for tok in sorted(vocab, key=vocab.get):
                try:
                    out.append(bytes(dec[ch] for ch in tok).decode("utf-8"))
                except (KeyError, UnicodeDecodeError):
                    continue
        except (OSError, ValueError, KeyError):
            pass
        _DECODED = out
    return _DECODED


def vocab_pieces():
    """Alphabetic pieces (2-8 letters, lower case) of the tokenizer's vocabulary, less the
    words of held-out values; the syllable words stand in when the file is missing."""
    global _PIECES
    if _PIECES is None:
        pieces = set()
        for t in decoded_vocab():
            w = t.strip()
            if w.isascii() and w.isalpha() and 2 <= len(w) <= 8:
                pieces.add(w.lower())
        _PIECES = sorted(pieces - heldout_words())
    return _PIECES


# the split pools and their salts (Pools.__init__)
HELD_POOLS = [(CITIES, ""), (FIRST_NAMES, "f"), (LAST_NAMES, "l"), (DIRS, ""), (FILE_STEMS, ""),
              (TIMEZONES, ""), (LANGUAGES, ""), (CUISINES, ""), (TOPICS, ""), (SEARCH_SUBJECTS, ""),
              (EMAIL_SUBJECTS, ""), (MESSAGE_BODIES, ""), (PHRASES, ""), (SONGS, ""), (WORDS, ""),
              (TASKS, ""), (SHELL_COMMANDS, ""), (COUNTRIES, "c")]


def heldout_words():
    """Words (4+ letters, lower case) of every held-out value: kept out of invented values,
    so that no evaluation value is trained as an argument by way of the vocabulary."""
    import re
    out = set()
    for values, salt in HELD_POOLS:
        for v in split_pool(values, "eval", salt):
            out.update(w.lower() for w in re.findall(r"[A-Za-z]+", str(v)) if len(w) >= 4)
    return out


def piece_word(r):
    pcs = vocab_pieces()
    if not pcs:
        return pseudo_word(r)
    return "".join(r.choice(pcs) for _ in range(r.choice([1, 2, 2, 3])))


def char_word(r, lo=3, hi=9):
    k = r.random()
    n = r.randint(lo, hi)
    if k < 0.4:
        return "".join(r.choice(LETTERS) for _ in range(n))
    if k < 0.7:
        return "".join(r.choice(ALNUM) for _ in range(n))
    w = "".join(r.choice(LETTERS) for _ in range(n))
    return w[:1].upper() + w[1:]


def styled(r, kind):
    """One invented word in a random style: kind 'name' capitalizes, 'word' keeps case."""
    k = r.random()
    if k < 0.35:
        w = pseudo_word(r)
    elif k < 0.75:
        w = piece_word(r)
    else:
        return char_word(r)
    return w.capitalize() if kind == "name" else w


def styled_phrase(r, lo=1, hi=4):
    return " ".join(styled(r, "word") for _ in range(r.randint(lo, hi)))


def styled_place(r):
    k = r.random()
    w = styled(r, "name")
    if k < 0.55:
        return w
    if k < 0.7:
        return w + " " + styled(r, "name")
    if k < 0.85:
        return r.choice(["San ", "Port ", "New ", "Lake ", "Saint ", "Fort ", "El ", "Las "]) + w
    return w + r.choice([" City", " Springs", " Bay", " Falls", " Heights", " Town"])


def styled_dir(r):
    sep = r.choice(["/", "/", "/", "-", "_", "."])
    parts = []
    for _ in range(r.randint(1, 4)):
        w = styled(r, "word")
        if r.random() < 0.2:
            w += sep if sep != "/" else "_" + str(r.randint(0, 2030))
        parts.append(w)
    root = r.choice(["/home/", "/srv/", "/data/", "", "", "/var/", "~/", "./", "/opt/", "/mnt/"])
    return root + "/".join(parts)


def styled_stem(r):
    s = styled(r, "word")
    if r.random() < 0.5:
        s += r.choice(["_", "-", ".", ""]) + r.choice([styled(r, "word"), str(r.randint(0, 2030))])
    return s


def styled_sentence(r):
    s = styled_phrase(r, 2, 7)
    return s[:1].upper() + s[1:] + r.choice([".", "!", "?", ".", ""])


AUGMENT_VARIED = {
    "cities": styled_place, "first": lambda r: styled(r, "name"),
    "last": lambda r: styled(r, "name"),
    "dirs": styled_dir, "stems": styled_stem,
    "timezones": lambda r: r.choice(["Europe", "America", "Asia", "Africa", "Pacific", "Australia",
                                     "Atlantic", "Indian"]) + "/" + styled(r, "name")
    + ("_" + styled(r, "name") if r.random() < 0.3 else ""),
    "languages": lambda r: styled(r, "name") + r.choice(["ish", "ese", "ian", "i", "", "ic"]),
    "cuisines": lambda r: styled(r, r.choice(["name", "word"])) + r.choice(["", "ian", " street food", " grill"]),
    "topics": lambda r: styled_phrase(r, 1, 3),
    "search": lambda r: r.choice(["how to ", "what is ", "", "best ", "why ", ""]) + styled_phrase(r, 1, 4),
    "subjects": lambda r: styled_phrase(r, 1, 3).capitalize(),
    "bodies": styled_sentence, "phrases": styled_sentence,
    "songs": lambda r: styled_phrase(r, 1, 3).title() if r.random() < 0.6 else styled_phrase(r, 1, 3),
    "words": lambda r: styled(r, "word"),
    "tasks": lambda r: r.choice(["buy ", "call ", "fix ", "send ", "check ", "clean ", "book ",
                                 "renew ", "pay ", "order "]) + styled_phrase(r, 1, 3),
    "commands": lambda r: r.choice(["ls ", "cat ", "du -sh ", "wc -l ", "rm -i ", "touch ", "grep -r ",
                                    "head -n 5 ", "tail ", "mkdir -p ", "git log ", ""]) + styled_dir(r),
}


class VariedAugPools:
    """Like AugPools, but an invented value is from AUGMENT (syllables) a third of the time
    and from AUGMENT_VARIED (syllables, vocabulary pieces, random characters) otherwise."""

    def __init__(self, base, r, rate=0.7):
        self.base = base
        for name, make in AUGMENT.items():
            vmake = AUGMENT_VARIED[name]
            pick = (lambda m, v: lambda rr: m(rr) if rr.random() < 0.33 else v(rr))(make, vmake)
            setattr(self, name, MixPool(getattr(base, name), r, pick, rate))

    def __getattr__(self, name):
        return getattr(self.base, name)


# ---- invented values over the whole vocabulary (--coverage) -------------------
# The styles above leave part of the vocabulary out (pieces that are words of held-out
# values, capitalised and non-alphabetic pieces), and a token never trained cannot be
# copied: its embedding stays at its random start.  --coverage glues invented words from
# every token of letters, digits and ._-/ (case kept), and writes free text in plain
# English (real words, and training sentences with words swapped), so that a
# familiar-looking sentence is no longer a safe guess and copying is the only thing that
# works.  Held-out values stay out: an invented value (or word) equal to a held-out value,
# case aside, is drawn again.

COMMON_WORDS = """
about above across act add after again against age ago air all almost alone along already also
always amount and animal another answer any anything apple april area arm around art ask at aunt
away baby back bad bag bake ball bank bar base basket bath be beach bean bear beautiful bed bee
before begin behind believe bell belt below bench best better between bicycle big bill bird
birthday bit black blanket blue board boat body book boot bottle bottom box boy brain bread
break breakfast brick bridge bright bring brother brown brush build bus busy butter button buy
cake call camera camp can candle cap car card care carpet carry case cat catch chair chalk
chance change charge cheap check cheese chicken child choose church circle city class clean
clear climb clock close cloth cloud coat coffee cold collect color come common cook cool copy
corner cotton count country cousin cover cow crowd cup cut daily dance dark date daughter day
dear decide deep desk dinner dirty dish doctor dog door double down draw dream dress drink drive
drop dry duck during early earth east easy eat edge egg empty end engine enough enter evening
event every exact example eye face fact fair fall family far farm fast father feel fence few
field fill film find fine finger finish fire first fish fit flag floor flower fly fold food foot
forest forget fork form free fresh friend front fruit full fun funny game garden gate gift girl
give glad glass go gold good grass great green ground group grow guess hair half hall hand happy
hard hat have head hear heart heavy help here high hill hold hole home hope horse hot hour house
hungry ice idea inside iron island jacket job join juice jump keep key kind king kitchen kite
knee knife know ladder lake lamp land large last late laugh lazy leaf learn leave left leg lemon
letter light like line lion list little live long look lose loud love low lunch machine make map
market match meal meat meet milk minute mirror money month moon morning mother mountain mouth
move music name narrow near neck need nest never new next nice night noise north nose note
number nurse ocean offer office old open orange order outside page paint pair paper parent park
party pass pay pen pencil people pepper piano picture piece pig pink place plane plant plate
play please pocket point pool poor potato power present pretty price print problem pull push
quick quiet rabbit race rain read ready red remember rest rice rich ride right ring river road
rock roof room root rope round rule run safe salt same sand save school sea season seat second
see seed sell send shape share sheep shelf ship shirt shoe shop short show sick side sign silver
simple sing sister sit size skirt sky sleep slow small smell smile snow soap sock soft soil song
soon sound soup south space speak spoon spring square stair stamp star start station stay step
stick stone stop store story street strong study sugar summer sun supper sweet swim table tail
take talk tall taste tea teach team tell test thank thick thin thing think ticket tiger time
tired today together tomorrow tonight tooth top towel town toy train tree trip true try turn
umbrella uncle under up use valley very visit voice wait walk wall want warm wash watch water
wave way weak wear week welcome west wet wheel white wide wife wind window winter wish wood word
work world write yard year yellow young zoo
""".split()

_COVER = None
_HELD_VALUES = None


def heldout_values():
    """Every held-out value of every pool, lower case."""
    global _HELD_VALUES
    if _HELD_VALUES is None:
        _HELD_VALUES = {str(v).lower() for values, salt in HELD_POOLS
                        for v in split_pool(values, "eval", salt)}
    return _HELD_VALUES


def cover_tables():
    """(pieces, words, sentences, tasks): every token of letters, digits and ._-/ (1-12
    characters, case kept); plain English words (COMMON_WORDS and the words of the training
    sentences, less the held-out one-word values); the training split's sentences and tasks."""
    global _COVER
    if _COVER is None:
        import re
        held = heldout_values()
        pieces, words = set(), set()
        for t in decoded_vocab():
            w = t.strip()
            if (w.isascii() and 1 <= len(w) <= 12 and sum(c.isalnum() for c in w) >= 1
                    and all(c.isalnum() or c in "._-/" for c in w)):
                pieces.add(w)
        train = Pools("train")
        sentences, tasks = train.bodies + train.phrases, train.tasks
        for s in sentences + tasks + train.topics + train.search:
            words.update(w.lower() for w in re.findall(r"[A-Za-z]+", s) if len(w) >= 2)
        words.update(COMMON_WORDS)
        _COVER = (sorted(pieces), sorted(words - held), sentences, tasks)
    return _COVER


def cover_word(r, kind):
    """One invented word: 1-3 vocabulary tokens glued (60%), a plain English word (20%),
    syllables or random characters; 'name' capitalises the first letter most of the time."""
    pieces, words, _, _ = cover_tables()
    held = heldout_values()
    while True:
        k = r.random()
        if k < 0.6 and pieces:
            w = "".join(r.choice(pieces) for _ in range(r.choice([1, 1, 2, 2, 3])))
        elif k < 0.8 and words:
            w = r.choice(words)
        elif k < 0.9:
            w = pseudo_word(r)
        else:
            return char_word(r)
        if kind == "name" and r.random() < 0.85:
            w = w[:1].upper() + w[1:]
        if w.lower() not in held:
            return w


def cover_phrase(r, lo=1, hi=4):
    _, words, _, _ = cover_tables()
    return " ".join(r.choice(words) if r.random() < 0.6 else cover_word(r, "word")
                    for _ in range(r.randint(lo, hi)))


def swap_words(r, text, k_max=2):
    """A sentence with 1..k_max of its words replaced by other words (punctuation kept)."""
    toks = text.split(" ")
    for _ in range(r.randint(1, k_max)):
        i = r.randrange(len(toks))
        tail = ""
        while toks[i] and not toks[i][-1].isalnum():
            tail = toks[i][-1] + tail
            toks[i] = toks[i][:-1]
        w = cover_phrase(r, 1, 1)
        if i == 0:
            w = w[:1].upper() + w[1:]
        toks[i] = w + tail
    return " ".join(toks)


def cover_sentence(r):
    """Plain-English free text: a training sentence with words swapped, or new words."""
    _, _, sentences, _ = cover_tables()
    if sentences and r.random() < 0.5:
        return swap_words(r, r.choice(sentences))
    s = cover_phrase(r, 2, 8)
    return s[:1].upper() + s[1:] + r.choice([".", ".", "!", "?", ""])


def cover_task(r):
    _, _, _, tasks = cover_tables()
    if tasks and r.random() < 0.5:
        return swap_words(r, r.choice(tasks))
    return r.choice(["buy ", "call ", "fix ", "send ", "check ", "clean ", "book ", "renew ",
                     "pay ", "order ", "email ", "finish ", "review ", "update "]) + cover_phrase(r, 1, 4)


def cover_place(r):
    k = r.random()
    w = cover_word(r, "name")
    if k < 0.55:
        return w
    if k < 0.75:
        return w + " " + cover_word(r, "name")
    if k < 0.9:
        return r.choice(["San ", "Port ", "New ", "Lake ", "Saint ", "Fort ", "El ", "Las ", "Rio de "]) + w
    return w + r.choice([" City", " Springs", " Bay", " Falls", " Heights", " Town"])


def cover_dir(r):
    parts = []
    for _ in range(r.randint(1, 4)):
        w = cover_word(r, "word")
        if r.random() < 0.2:
            w += r.choice(["_", "-", "."]) + str(r.randint(0, 2030))
        parts.append(w)
    root = r.choice(["/home/", "/srv/", "/data/", "", "", "/var/", "~/", "./", "/opt/", "/mnt/"])
    return root + "/".join(parts)


def cover_stem(r):
    s = cover_word(r, "word")
    if r.random() < 0.5:
        s += r.choice(["_", "-", ".", ""]) + r.choice([cover_word(r, "word"), str(r.randint(0, 2030))])
    return s


AUGMENT_COVER = {
    "cities": cover_place, "first": lambda r: cover_word(r, "name"),
    "last": lambda r: cover_word(r, "name"),
    "dirs": cover_dir, "stems": cover_stem,
    "timezones": lambda r: r.choice(["Europe", "America", "Asia", "Africa", "Pacific", "Australia",
                                     "Atlantic", "Indian", "Antarctica"]) + "/" + cover_word(r, "name")
    + ("_" + cover_word(r, "name") if r.random() < 0.3 else ""),
    "languages": lambda r: cover_word(r, "name") + r.choice(["ish", "ese", "ian", "i", "", "ic", ""]),
    "cuisines": lambda r: cover_phrase(r, 1, 2) + r.choice(["", "", "ian", " street food", " grill"]),
    "topics": lambda r: cover_phrase(r, 1, 3),
    "search": lambda r: r.choice(["how to ", "what is ", "", "", "best ", "why ", "cheap "]) + cover_phrase(r, 1, 5),
    "subjects": lambda r: cover_phrase(r, 1, 4).capitalize(),
    "bodies": cover_sentence, "phrases": cover_sentence,
    "songs": lambda r: cover_phrase(r, 1, 3).title() if r.random() < 0.6 else cover_phrase(r, 1, 3),
    "words": lambda r: cover_word(r, "word"),
    "tasks": cover_task,
    "commands": lambda r: r.choice(["ls ", "cat ", "du -sh ", "wc -l ", "rm -i ", "touch ", "grep -r ",
                                    "head -n 5 ", "tail ", "mkdir -p ", "git log ", ""]) + cover_dir(r),
}


class CoverAugPools:
    """Like VariedAugPools, with a third family of invented values: an invented value comes
    from AUGMENT (15%), AUGMENT_VARIED (25%) or AUGMENT_COVER (60%)."""

    def __init__(self, base, r, rate=0.7):
        self.base = base
        for name, make in AUGMENT.items():
            vmake, cmake = AUGMENT_VARIED[name], AUGMENT_COVER[name]

            def pick(rr, m=make, v=vmake, c=cmake):
                while True:
                    k = rr.random()
                    val = m(rr) if k < 0.15 else (v(rr) if k < 0.4 else c(rr))
                    if val.lower() not in heldout_values():
                        return val
            setattr(self, name, MixPool(getattr(base, name), r, pick, rate))

    def __getattr__(self, name):
        return getattr(self.base, name)
