"""The training lexicon of the procedural tools (toolgen.py): objects of the training
domains (math, money, messaging, calendars, files, web, devices, databases, code, and the
everyday ones: weather, travel, shopping, media, notes, contacts, maps, time), verb
classes, phrasings and value makers.  The held-out evaluation (heldout.py) has its own
words and phrasings; tests in heldout.py --check keep the two apart.
"""
import random
import re

import pools
from toolgen import Lexicon, a_an, cap

# noun/plural | domain | actions | attributes ('*' marks an identifier) [| namespace words]
OBJECTS = """
expression/expressions|math|compute|expression:expr
equation/equations|math|compute|equation:expr;variable:word
number/numbers|math|compute|values:arr(num);operation:enum(sum/mean/max/min/median)
percentage/percentages|math|compute|value:num;percent:num
square root/square roots|math|compute|number:num;precision:int
unit conversion/unit conversions|math|compute|value:num;from unit:word;to unit:word
random number/random numbers|math|create|min:int;max:int;count:int
invoice/invoices|money|get,list,create,update,delete,send|*invoice id:id;customer:name;amount:money;currency:currency;due date:date;paid:bool;items:arr(word)|billing
payment/payments|money|get,list,create,check|*payment id:id;amount:money;currency:currency;payer:email;method:enum(card/transfer/cash);note:text|billing
exchange rate/exchange rates|money|get,compute|base:currency;target:currency;amount:money;date:date|fx
currency/currencies|money|compute|amount:money;from currency:currency;to currency:currency|fx
budget/budgets|money|get,create,update,list|*budget name:name;limit:money;month:int;category:enum(food/rent/travel/other)|finance
expense/expenses|money|create,list,delete,update|*expense id:id;amount:money;category:word;date:date;description:text;receipt:url|finance
account balance/account balances|money|get,check|*account:id;currency:currency|bank
transaction/transactions|money|get,list,create|*transaction id:id;amount:money;from account:id;to account:id;memo:text|bank
stock price/stock prices|money|get,list|*symbol:word;exchange:word;date:date|market
stock quote/stock quotes|money|get|*ticker:word;fields:arr(word)|market
tax/taxes|money|compute|income:money;country:place;year:int|finance
loan/loans|money|compute,get,create|principal:money;rate:num;years:int|bank
email/emails|messaging|send,get,list,delete,update|*message id:id;to:email;subject:text;body:text;cc:arr(email);urgent:bool|mail
message/messages|messaging|send,list,delete,get|*message id:id;recipient:name;text:text;channel:word;silent:bool|chat
chat channel/chat channels|messaging|create,list,delete,get|*channel name:word;topic:text;private:bool;members:arr(name)|chat
sms/sms messages|messaging|send,list|phone number:phone;text:text;sender:name|sms
notification/notifications|messaging|send,list,delete|*notification id:id;user:name;title:text;priority:enum(low/normal/high)|notify
newsletter/newsletters|messaging|send,create,list|*title:text;audience:word;send date:date|mail
comment/comments|messaging|create,list,delete,update|*comment id:id;post id:id;text:text;author:name|social
post/posts|messaging|create,get,list,delete,update|*post id:id;title:text;body:text;tags:arr(word);draft:bool|social
event/events|calendar|create,get,list,update,delete|*event id:id;title:text;date:date;start time:time;duration minutes:int;location:place;attendees:arr(email)|calendar
meeting/meetings|calendar|create,list,update,delete|*meeting id:id;topic:text;date:date;time:time;participants:arr(name);video:bool|calendar
reminder/reminders|calendar|create,list,delete|*reminder id:id;text:text;date:date;time:time;repeat:enum(never/daily/weekly/monthly)|reminders
appointment/appointments|calendar|create,get,update,delete,list|*appointment id:id;with person:name;date:date;time:time;notes:text|booking
timer/timers|calendar|create,delete,list|*timer id:id;minutes:int;seconds:int;label:text|clock
alarm/alarms|calendar|create,delete,list,update|*alarm id:id;time:time;label:text;days:arr(word);enabled:bool|clock
time zone/time zones|calendar|get,compute|*zone:word;time:time;date:date|time
holiday/holidays|calendar|list,get|country:place;year:int|calendar
availability/availabilities|calendar|get,check|*person:name;date:date;duration minutes:int|calendar
file/files|files|get,create,update,delete,list,transfer|*path:path;content:text;encoding:enum(utf-8/ascii/latin-1);overwrite:bool|fs
folder/folders|files|create,list,delete,transfer|*path:path;recursive:bool;pattern:word|fs
document/documents|files|get,create,update,delete,list,send|*document id:id;title:text;body:text;owner:email;format:enum(pdf/docx/txt/md)|docs
spreadsheet/spreadsheets|files|get,create,update,list|*sheet id:id;range:word;values:arr(num);title:text|sheets
backup/backups|files|create,list,get,transfer|*backup id:id;source:path;destination:path;compress:bool|backup
archive/archives|files|create,transfer,list|*archive path:path;files:arr(path);format:enum(zip/tar/gz)|fs
attachment/attachments|files|get,list,delete|*attachment id:id;message id:id|mail
web page/web pages|web|get,check|*url:url;timeout seconds:int;follow redirects:bool|http
search result/search results|web|list|query:query;max results:int;site:word;language:lang|search
url/urls|web|get,check,create|*url:url;method:enum(GET/POST/HEAD);body:text|http
bookmark/bookmarks|web|create,list,delete|*url:url;title:text;folder:word|browser
news article/news articles|web|list,get|*article id:id;topic:query;source:word;since:date|news
rss feed/rss feeds|web|get,list,create|*feed url:url;limit:int|feeds
translation/translations|web|compute,get|text:text;target language:lang;source language:lang;formal:bool|translate
weather/weather reports|web|get|*city:place;units:enum(metric/imperial);include forecast:bool|weather
forecast/forecasts|web|get|*city:place;days:int;units:enum(metric/imperial)|weather
air quality/air quality readings|web|get|*city:place;pollutant:enum(pm25/pm10/ozone)|weather
light/lights|devices|control,get,update,list|*light name:word;room:word;brightness:int;color:word;on:bool|home
thermostat/thermostats|devices|get,update,control|*device id:id;temperature:num;mode:enum(heat/cool/auto/off)|home
door lock/door locks|devices|control,get,check|*lock id:id;locked:bool;code:code5|home
camera/cameras|devices|get,list,control|*camera id:id;zoom:int;record:bool|security
speaker/speakers|devices|control,update,get|*speaker name:word;volume:int;muted:bool|audio
printer/printers|devices|check,get,list,transfer|*printer name:word;copies:int;color:bool;file:path|office
sensor/sensors|devices|get,list,check|*sensor id:id;metric:enum(temperature/humidity/motion/co2);since:date|iot
device/devices|devices|list,get,control,delete|*device id:id;kind:word;online:bool|iot
vacuum robot/vacuum robots|devices|control,get|*robot name:word;room:word;mode:enum(quiet/normal/turbo)|home
table/tables|databases|create,list,delete,get|*table name:word;columns:arr(word);schema name:word|db
row/rows|databases|create,get,update,delete,list|*row id:int;table:word;values:obj(name=word;count=int)|db
sql query/sql queries|databases|compute,check|query:code;database:word;limit:int;read only:bool|sql
database/databases|databases|create,list,delete,check,transfer|*database name:word;owner:name;size gb:int|db
index/indexes|databases|create,delete,list|*index name:word;table:word;columns:arr(word);unique:bool|db
record/records|databases|get,create,update,delete,list|*record id:id;collection:word;fields:obj(key=word;value=text)|store
cache entry/cache entries|databases|get,delete,create|*key:word;value:text;ttl seconds:int|cache
repository/repositories|code|create,get,list,delete,transfer|*repo name:word;owner:name;private:bool;description:text|git
branch/branches|code|create,delete,list,transfer|*branch name:word;repo:word;from ref:word|git
commit/commits|code|get,list,create|*commit sha:id;repo:word;message:text;author:email|git
pull request/pull requests|code|create,get,list,update,check|*pr number:int;repo:word;title:text;base:word;head:word;reviewers:arr(name)|git
issue/issues|code|create,get,list,update,delete|*issue number:int;repo:word;title:text;labels:arr(word);assignee:name;state:enum(open/closed)|tracker
build/builds|code|create,get,list,check,control|*build id:id;branch:word;target:word;clean:bool|ci
test/tests|code|check,list,control|*test name:word;suite:word;verbose:bool;retries:int|ci
deployment/deployments|code|create,get,list,control,delete|*deployment id:id;service:word;environment:enum(dev/staging/prod);version:word;replicas:int|deploy
container/containers|code|create,list,control,delete,get|*container name:word;image:word;port:int;env:obj(key=word;value=word)|docker
package/packages|code|get,create,delete,list,check|*package name:word;version:word;registry:word;dev:bool|pkg
code snippet/code snippets|code|check,compute,create|code:code;language:enum(python/javascript/go/rust/c);timeout seconds:int|sandbox
shell command/shell commands|code|compute,check|command:code;working directory:path;timeout seconds:int|shell
log/logs|code|get,list,delete|*service:word;since:date;level:enum(debug/info/warn/error);lines:int|logs
metric/metrics|code|get,list|*metric name:word;window minutes:int;service:word|monitor
alert/alerts|code|create,list,delete,update|*alert id:id;metric name:word;threshold:num;severity:enum(low/medium/high/critical)|monitor
user/users|code|create,get,list,update,delete|*username:word;email:email;role:enum(admin/editor/viewer);active:bool|auth
password/passwords|code|update,check,create|*username:word;length:int;symbols:bool|auth
api key/api keys|code|create,list,delete|*key id:id;scopes:arr(word);expires:date|auth
ticket/tickets|code|create,get,list,update,delete|*ticket id:id;subject:text;priority:enum(low/medium/high/urgent);requester:email|support
order/orders|shopping|create,get,list,update,delete,check|*order id:id;product:text;quantity:int;address:obj(street=text;city=place;zip=code5);express:bool|shop
product/products|shopping|get,list,create,update|*sku:id;name:text;price:money;category:word;in stock:bool|shop
cart/carts|shopping|get,update,delete|*cart id:id;item:text;quantity:int|shop
coupon/coupons|shopping|check,create,list|*code:word;discount percent:int;expires:date|shop
shipment/shipments|shopping|get,create,list,check|*tracking number:id;carrier:word;destination:place|shipping
return/returns|shopping|create,get,list|*return id:id;order id:id;reason:text;refund:bool|shop
review/reviews|shopping|create,list,delete|*review id:id;product:text;rating:int;text:text|shop
flight/flights|travel|list,get,create,delete|*flight number:id;origin:place;destination:place;date:date;passengers:int;class:enum(economy/business/first)|travel
train ticket/train tickets|travel|list,create,delete|origin:place;destination:place;date:date;time:time;seats:int|rail
car rental/car rentals|travel|create,list,delete|*booking id:id;city:place;pickup date:date;return date:date;car size:enum(small/medium/large)|travel
route/routes|travel|get,compute|origin:place;destination:place;mode:enum(driving/walking/cycling/transit);avoid tolls:bool|maps
place/places|travel|list,get|*place name:text;near:place;radius km:num;open now:bool|maps
taxi/taxis|travel|create,delete|pickup:place;dropoff:place;time:time;passengers:int|ride
song/songs|media|get,list,control|*title:text;artist:name;album:text;shuffle:bool|music
playlist/playlists|media|create,list,update,delete|*playlist name:text;songs:arr(text);public:bool|music
podcast/podcasts|media|list,get,control|*show:text;episode:int|podcasts
video/videos|media|get,list,create,delete,transfer|*video id:id;title:text;resolution:enum(480p/720p/1080p/4k);subtitles:bool|video
photo/photos|media|list,get,delete,transfer,update|*photo id:id;album:text;caption:text;taken after:date|photos
movie/movies|media|list,get|*title:text;year:int;genre:word|movies
note/notes|notes|create,get,list,update,delete|*note id:id;title:text;body:text;tags:arr(word);pinned:bool|notes
task/tasks|notes|create,get,list,update,delete|*task id:id;title:text;due date:date;priority:enum(low/medium/high);done:bool;assignee:name|tasks
todo list/todo lists|notes|create,list,delete|*list name:text;items:arr(text)|tasks
checklist/checklists|notes|create,update,get|*checklist id:id;title:text;items:arr(text)|notes
contact/contacts|contacts|create,get,list,update,delete|*contact id:id;name:name;email:email;phone:phone;company:text;birthday:date|crm
customer/customers|contacts|create,get,list,update|*customer id:id;name:name;email:email;plan:enum(free/pro/enterprise);notes:text|crm
lead/leads|contacts|create,list,update|*lead id:id;name:name;company:text;score:int;source:word|crm
server/servers|devices|get,list,control,check|*host:word;port:int;region:word|infra
domain name/domain names|web|check,get,create|*domain:word;years:int;auto renew:bool|dns
dns record/dns records|web|create,list,delete,update|*record id:id;domain:word;type:enum(A/AAAA/CNAME/MX/TXT);value:word;ttl:int|dns
certificate/certificates|web|create,check,get|*domain:word;days valid:int|tls
vm/vms|code|create,list,control,delete|*vm name:word;cpus:int;memory gb:int;image:word;region:word|cloud
bucket/buckets|files|create,list,delete|*bucket name:word;region:word;public:bool|storage
secret/secrets|code|create,get,delete,update|*secret name:word;value:text;vault:word|vault
job/jobs|code|create,get,list,control,delete|*job id:id;command:code;schedule:word;retries:int|cron
survey/surveys|messaging|create,send,list,get|*survey id:id;title:text;questions:arr(text);anonymous:bool|forms
poll/polls|messaging|create,get,delete|*poll id:id;question:text;options:arr(word);multiple:bool|chat
"""

# verbs that only some objects take in their names (a translation is translated)
NAME_VERBS = {"translation": {"compute": ["translate"], "get": ["translate"]},
              "currency": {"compute": ["convert", "exchange"]}, "unit conversion": {"compute": ["convert"]},
              "shell command": {"compute": ["run", "execute", "exec"]},
              "code snippet": {"compute": ["run", "execute", "eval"]},
              "sql query": {"compute": ["run", "execute"]}}
SINGLETON = {"weather", "forecast", "air quality", "exchange rate", "route", "availability"}


def parse_objects(text):
    out = []
    for line in text.strip().splitlines():
        parts = line.split("|")
        noun, plural = parts[0].split("/")
        acts = []
        for a in parts[2].split(","):
            acts += {"control": ["start", "stop"], "transfer": ["export", "import"]}.get(a, [a])
        o = {"noun": noun, "plural": plural, "domain": parts[1], "actions": acts,
             "attrs": [a for a in re.split(r";(?![^()]*\))", parts[3]) if a]}
        if noun in NAME_VERBS:
            o["name_verbs"] = NAME_VERBS[noun]
        if len(parts) > 4:
            o["ns"] = [parts[4]]
        if noun in SINGLETON:
            o["singleton"] = True
        out.append(o)
    return out


ASKS = {
    "expression": {"compute": ["What is {expression}?", "What's {expression}?", "How much is {expression}?",
                               "Work out {expression}.", "{expression} = ?", "Calculate {expression} for me.",
                               "Can you tell me what {expression} comes to?"]},
    "currency": {"compute": ["How much is {amount} {from currency} in {to currency}?",
                             "Convert {amount} {from currency} to {to currency}.",
                             "What are {amount} {from currency} worth in {to currency}?"]},
    "exchange rate": {"get": ["What's the exchange rate from {base} to {target}?",
                              "How many {target} do I get for one {base}?"]},
    "weather": {"get": ["What's the weather in {city}?", "What is the weather like in {city}?",
                        "Is it cold in {city} right now?", "weather in {city}?", "How's the weather in {city} today?"]},
    "forecast": {"get": ["What will the weather be in {city} for the next {days} days?",
                         "Give me the {days}-day forecast for {city}."]},
    "stock price": {"get": ["What's {symbol} trading at?", "What is the stock price of {symbol}?",
                            "How much is {symbol} stock right now?", "Price of {symbol} shares?"]},
    "stock quote": {"get": ["Quote for {ticker}?", "Get me a quote on {ticker}."]},
    "translation": {"compute": ["Translate {text} into {target language}.",
                                "How do you say {text} in {target language}?",
                                "What is {text} in {target language}?"]},
    "search result": {"list": ["Search the web for {query}.", "Look up {query} online.",
                               "Find {query} on the web.", "Google {query}."]},
    "timer": {"create": ["Set a timer for {minutes} minutes.", "Start a {minutes} minute timer.",
                         "Timer {minutes} minutes please.", "Count down {seconds} seconds."]},
    "alarm": {"create": ["Wake me up at {time}.", "Set an alarm for {time}."]},
    "route": {"get": ["How do I get from {origin} to {destination}?",
                      "Directions from {origin} to {destination}, please."]},
    "time zone": {"get": ["What time is it in {zone}?", "Current time in {zone}?"]},
    "percentage": {"compute": ["What is {percent} percent of {value}?", "{percent}% of {value}?"]},
    "square root": {"compute": ["What's the square root of {number}?"]},
    "web page": {"get": ["Open {url} and tell me what it says.", "Fetch {url}."]},
    "email": {"send": ["Email {to} with subject {subject} and body {body}.",
                       "Send {to} an email saying {body}, subject {subject}.",
                       "Write to {to}: {body} (subject {subject})."]},
    "message": {"send": ["Tell {recipient} {text}.", "Message {recipient}: {text}",
                         "Text {recipient} that {text}"]},
    "file": {"get": ["What's in {path}?", "Show me {path}.", "cat {path}"]},
    "folder": {"list": ["What's in the folder {path}?", "ls {path}"]},
    "event": {"create": ["Put {title} on my calendar on {date}.", "Add {title} to the calendar for {date}."]},
    "shell command": {"compute": ["Run {command}.", "Execute {command} in the shell."]},
    "news article": {"list": ["Any news about {topic}?", "What's new with {topic}?"]},
}

VERBS = {
    "get": {"name": ["get", "fetch", "read", "retrieve", "lookup", "show", "describe", "view", "get details"],
            "say": ["get", "fetch", "show me", "look up", "find", "pull up", "retrieve", "give me", "tell me", "read"],
            "desc": ["Get", "Fetch", "Return", "Retrieve", "Look up", "Show", "Read", "Load"],
            "past": "fetched"},
    "list": {"name": ["list", "search", "find", "query", "browse", "list all", "get all"],
             "say": ["list", "show", "search for", "find", "give me", "enumerate", "browse"],
             "desc": ["List", "Search", "Find", "Query", "Browse", "Enumerate"], "past": "listed"},
    "create": {"name": ["create", "add", "new", "make", "insert", "register", "open", "book", "schedule"],
               "say": ["create", "add", "make", "set up", "open", "register", "book", "schedule", "start", "put in"],
               "desc": ["Create", "Add", "Make", "Register", "Open", "Insert", "Book", "Schedule"],
               "past": "created"},
    "update": {"name": ["update", "edit", "modify", "change", "patch", "rename", "set"],
               "say": ["update", "change", "edit", "modify", "adjust", "fix", "rename"],
               "desc": ["Update", "Edit", "Modify", "Change", "Patch"], "past": "updated"},
    "delete": {"name": ["delete", "remove", "drop", "cancel", "clear", "archive", "destroy"],
               "say": ["delete", "remove", "get rid of", "cancel", "drop", "erase", "throw away"],
               "desc": ["Delete", "Remove", "Drop", "Cancel", "Archive"], "past": "deleted"},
    "send": {"name": ["send", "post", "notify", "share", "publish", "forward", "deliver", "dispatch"],
             "say": ["send", "post", "share", "forward", "deliver", "push out", "publish"],
             "desc": ["Send", "Post", "Share", "Publish", "Deliver", "Forward"], "past": "sent"},
    "compute": {"name": ["calculate", "compute", "evaluate", "estimate", "solve", "calc"],
                "say": ["calculate", "compute", "work out", "figure out", "evaluate", "solve"],
                "desc": ["Calculate", "Compute", "Evaluate", "Estimate", "Solve"],
                "past": "computed"},
    "start": {"name": ["start", "launch", "run", "enable", "resume", "turn on", "activate", "boot"],
              "say": ["start", "launch", "turn on", "switch on", "resume", "fire up", "enable", "kick off"],
              "desc": ["Start", "Launch", "Turn on", "Enable", "Resume", "Activate"], "past": "started"},
    "stop": {"name": ["stop", "halt", "pause", "disable", "turn off", "shutdown", "kill", "suspend"],
             "say": ["stop", "halt", "pause", "turn off", "switch off", "shut down", "disable", "kill"],
             "desc": ["Stop", "Halt", "Pause", "Turn off", "Disable", "Shut down"], "past": "stopped"},
    "check": {"name": ["check", "validate", "verify", "test", "ping", "scan", "inspect", "audit"],
              "say": ["check", "validate", "verify", "test", "ping", "scan", "inspect"],
              "desc": ["Check", "Validate", "Verify", "Test", "Inspect", "Scan"], "past": "checked"},
    "export": {"name": ["export", "download", "dump", "save", "backup", "copy"],
               "say": ["export", "download", "dump", "save a copy of", "back up", "copy out"],
               "desc": ["Export", "Download", "Dump", "Save a copy of", "Back up"], "past": "exported"},
    "import": {"name": ["import", "upload", "restore", "load", "ingest"],
               "say": ["import", "upload", "restore", "load in", "bring in", "ingest"],
               "desc": ["Import", "Upload", "Restore", "Load", "Ingest"], "past": "imported"},
}

CLASS_PARAMS = {
    "get": ["fields:arr(word)", "format:enum(json/text/csv)", "include history:bool", "verbose:bool"],
    "list": ["limit:int", "page:int", "sort:enum(asc/desc)", "order by:word", "since:date", "query:query",
             "include archived:bool", "status:enum(active/inactive/all)"],
    "create": ["notify:bool", "tags:arr(word)", "description:text", "dry run:bool"],
    "send": ["schedule at:time", "dry run:bool"],
    "delete": ["force:bool", "permanent:bool", "reason:text"],
    "start": ["delay seconds:int", "wait:bool"],
    "stop": ["force:bool", "delay seconds:int"],
    "check": ["strict:bool", "timeout seconds:int"],
    "compute": ["precision:int", "round:bool"],
    "export": ["destination:path", "format:enum(csv/json/xml)", "overwrite:bool"],
    "import": ["source:path", "overwrite:bool", "format:enum(csv/json/xml)"],
}

DESC_FORMS = [
    "{Desc} {a_noun}.", "{Desc} {a_noun}.", "{Desc} the {noun} with the given {label}.",
    "{Desc} {a_noun} in the {domain} service.", "Use this to {say} {a_noun}.",
    "{Desc} {a_noun}. Returns the result as JSON.", "{Desc} {plural}.",
    "{Desc} {a_noun} for the current user.", "Tool: {desc} {a_noun}.",
    "{Desc} {a_noun} by {label}.", "Lets the assistant {say} {a_noun}.",
    "{Desc} one {noun}. Fails if the {label} is unknown.", "{domain}: {desc} {a_noun}",
    "Call this when the user wants to {say} {a_noun}.", "{Desc} {a_noun} (requires {label}).",
]

PARAM_DESC = {
    "*": ["The {label}", "{Label}", "{Label} of the item", "The {label} to use", "{Label}, as text"],
    "date": ["{Label} (YYYY-MM-DD)", "{Label} in ISO format, e.g. 2025-01-31", "The {label}, YYYY-MM-DD"],
    "time": ["{Label} (HH:MM, 24h)", "The {label} as HH:MM"],
    "int": ["{Label}", "Number of {label}", "{Label} (an integer)", "How many {label}"],
    "num": ["{Label}", "{Label} as a number", "The {label} value"],
    "money": ["{Label}", "The {label} in the currency's units", "{Label} (decimal)"],
    "bool": ["Whether to {label}", "Set to true for {label}", "{Label} flag", "If true, {label}"],
    "enum": ["{Label}: one of {opts}", "The {label}", "{Label} ({opts})"],
    "arr": ["List of {label}", "The {label}", "{Label} as an array"],
    "email": ["{Label} e-mail address", "The {label} (email)", "{Label}"],
    "url": ["{Label} (full URL)", "The {label}", "URL of the {label}"],
    "path": ["{Label} (file system path)", "Path of the {label}", "The {label}"],
    "id": ["The {label}", "{Label}, as returned by the list call", "Identifier ({label})"],
}

MENTION = {
    "*": ["{label} {v}", "with {label} {v}", "{label}: {v}", "with the {label} set to {v}",
          "where the {label} is {v}", "using {v} as the {label}", "{label}={v}", 
          "for {label} {v}", "(the {label} is {v})"],
    "int": ["{label} {v}", "with {label} {v}", "{label}: {v}", "{label} = {v}", "{label} set to {v}",
            "{v} for {label}"],
    "num": ["{label} {v}", "with {label} {v}", "{label}: {v}", "{label} of {v}", "at {label} {v}"],
    "money": ["{label} {v}", "for {label} {v}", "{label}: {v}", "with {label} {v}", "of {label} {v}"],
    "enum": ["{label} {v}", "with {label} {v}", "{label}: {v}", "{v} as the {label}", "set {label} to {v}"],
    "arr": ["{label} {v}", "with {label} {v}", "{label}: {v}", "{label} set to {v}", "including {label} {v}"],
}

BOOL = {True: ["with {label}", "with {label} on", "{label}: yes", "set {label} to true", "{label} enabled",
               "{label} true", "make sure {label} is on", "with {label} turned on"],
        False: ["without {label}", "with {label} off", "{label}: no", "set {label} to false",
                "{label} disabled", "no {label}", "with {label} set to false", "turning {label} off"]}

OBJ_FORMS = ["{label} {body}", "with {label} {body}", "{label}: {body}", "{label} ({body})"]
OBJ_INNER = [("{f} {v}", ", "), ("{f} {v}", " and "), ("{f}: {v}", ", "), ("{f}={v}", " ")]

REQUEST = ["{C}.", "Please {c}.", "Can you {c}?", "Could you {c} for me?", "I need you to {c}.",
           "{C}, please.", "Hey, {c}.", "I'd like to {c}.", "Go ahead and {c}.", "Would you {c}?",
           "{C}", "Quick one: {c}.", "Help me {c}.", "I want to {c}.", "can you {c}", "Need to {c}."]

OBJ_PHRASE = {
    "get": ["the {noun}", "{a_noun}", "my {noun}", "that {noun}", "the {noun} details"],
    "list": ["the {plural}", "all {plural}", "my {plural}", "{plural}", "every {noun}"],
    "create": ["{a_noun}", "a new {noun}", "{a_noun} for me", "another {noun}"],
    "update": ["the {noun}", "my {noun}", "that {noun}"],
    "delete": ["the {noun}", "my {noun}", "that {noun}", "{a_noun}"],
    "send": ["{a_noun}", "the {noun}", "a new {noun}"],
    "compute": ["the {noun}", "{a_noun}", "this {noun}"],
    "start": ["the {noun}", "my {noun}", "that {noun}"],
    "stop": ["the {noun}", "my {noun}", "that {noun}"],
    "check": ["the {noun}", "my {noun}", "{a_noun}"],
    "export": ["the {noun}", "my {noun}", "that {noun}", "the {plural}"],
    "import": ["the {noun}", "{a_noun}", "the {plural}"],
}

PARALLEL = ["{A}. Also {b}.", "Can you {a} and {b}?", "Please {a}, and also {b}.",
            "Two things: {a}; and {b}.", "{A} and {b}, please.", "First {a}, then {b}.",
            "I need two things: {a}, and {b}."]
TRIPLE = ["Please {a}, {b}, and {c}.", "Three things: {a}; {b}; {c}.", "Can you {a}, {b} and also {c}?"]

ANSWERS = {
    "get": ["The {noun} {label} is {v}.", "Here it is: {label} {v}.", "I found it: the {label} is {v}.",
            "The {noun} has {label} {v}."],
    "list": ["I found {n} {plural}: {names}.", "There are {n} {plural}: {names}.", "Here they are: {names}."],
    "none": ["There are no {plural} that match.", "I found no {plural}."],
    "compute": ["The result is {v}.", "It comes to {v}.", "That gives {v}.", "Answer: {v}."],
    "done": ["Done: the {noun} was {say} (id {id}).", "The {noun} is {say}; its id is {id}.",
             "All set, {id} {say}.", "Status: {status} ({id})."],
}

STATUS = {"create": ["created", "ok", "done"], "update": ["updated", "ok", "saved"],
          "delete": ["deleted", "ok", "removed"], "send": ["sent", "queued", "delivered"],
          "start": ["running", "started", "ok", "on"], "stop": ["stopped", "off", "ok", "paused"],
          "check": ["ok", "passed", "valid", "failed"], "export": ["done", "exported", "ok"],
          "import": ["done", "imported", "ok"]}

THINK_CALL = [
    "The user wants to {say} {a_noun}. {name} does that, so I'll call it with {keys}.",
    "{name} is the offered tool for this. I'll fill in {keys} from the request.",
    "I need {name} here; the arguments are {keys}.",
    "The request is about {a_noun}. Among the offered tools, {name} matches, so I'll call it.",
]
THINK_MULTI = ["The user asks for {n} things: {parts}. They are independent, so I will make all {n} calls at once.",
               "{n} separate requests: {parts}. I'll call them together."]
THINK_ANSWER = ["{name} returned its result. I can answer with it now.",
                "The tool results are in. I'll answer with them.",
                "I have the result; I'll report it."]
THINK_REFUSE_NONE = [
    "The user wants to {say} {a_noun}. None of the offered tools does that, so I must not call anything.",
    "I need a tool to {say} {a_noun}, but no offered tool does it. I must not invent a call.",
]
THINK_REFUSE = [
    "The user wants to {say} {a_noun}. No offered tool does that ({near} is for something else), so I must not call anything.",
    "I need a tool to {say} {a_noun}, but none of the offered tools does it; {near} does not fit. I must not invent a call.",
    "The request is about {a_noun}. The offered tools do not include one for this, and {near} is a different action. I'll say so.",
]
# --think-candidate: the reasoning names the closest offered tool first and then checks it, so
# the call-or-refuse decision comes after the name (the third session's weights found the tool
# but decided from a prior) and reads one word: "fits" or "does not"
THINK_CALL_CAND = [
    "The user wants to {say} {a_noun}. The closest offered tool is {name}, and it fits, so I'll call it with {keys}.",
    "The request is about {a_noun}. Closest offered tool: {name}; it fits, so I'll call it.",
]
THINK_REFUSE_CAND = [
    "The user wants to {say} {a_noun}. The closest offered tool is {near}, but it does not {say} {a_noun}, so I must not call anything.",
    "The request is about {a_noun}. Closest offered tool: {near}; it does not fit, so I'll say so.",
]
REFUSAL = [
    "I can't do that here: none of the available tools can {say} {a_noun}.",
    "Sorry, I don't have a tool to {say} {a_noun} in this conversation.",
    "None of the tools I was given can {say} {a_noun}, so I can't do that.",
    "I'm not able to {say} {a_noun}: no tool for it is available.",
]
PREAMBLES = ["Let me check that.", "One moment.", "Sure, on it.", "Okay."]

SYSTEM_PROMPTS = [
    "You are a helpful assistant.", "You are ngxllm-tiny, a small assistant that can call tools.",
    "You are a concise assistant. Answer briefly.", "You help users by calling the available tools when they are needed.",
    "You are a friendly assistant running inside nginx.", "You are an agent. Use the tools when a request needs them.",
]

CHAT = [(u, a) for u, a in [
    ("Hello!", "Hello! How can I help you today?"), ("Hi there", "Hi! What can I do for you?"),
    ("Good morning!", "Good morning! How can I help?"), ("Thanks, that's all.", "You're welcome! Have a great day."),
    ("Thank you!", "You're welcome!"), ("Who are you?", "I am ngxllm-tiny, a small assistant model served by nginx. I can chat and call tools."),
    ("What can you do?", "I can answer short questions and, when tools are offered, call them for you."),
    ("How are you?", "I'm doing well, thanks for asking. How can I help?"),
    ("Tell me a joke.", "Why did the developer go broke? Because he used up all his cache."),
    ("Are you a real person?", "No, I am a small language model called ngxllm-tiny."),
    ("What is your name?", "My name is ngxllm-tiny."), ("Bye!", "Goodbye! Come back any time."),
    ("Hello there!", "Hello! What can I do for you today?"), ("Hey", "Hey! How can I help?"),
    ("Nice to meet you.", "Nice to meet you too! What can I do for you?"),
    ("What is nginx?", "nginx is a fast web server and reverse proxy. I run inside it as a module."),
    ("What is a tool call?", "A tool call is a structured request I make to a function, with a name and JSON arguments."),
    ("Give me a tip for focus.", "Work in short blocks of 25 minutes and take a short break after each."),
    ("Can you keep a secret?", "I don't remember anything between conversations, so your secret is safe."),
    ("ok", "Okay! Let me know if you need anything else."), ("Great, thanks", "Glad I could help!"),
    ("Say something nice.", "You are doing great, and your questions are always welcome."),
]]
CHAT_WHY = ["This is a simple message. No tool is needed, I can answer directly.",
            "The user is just chatting. I will reply without calling any tool.",
            "No function is needed for this. I'll answer myself."]

CODE_LINES = ["def {a}({b}):", "    return {b} + 1", "const {a} = require('{b}');", "if ({a} > {n}) {{",
              "for i in range({n}):", "SELECT {a} FROM {b} WHERE id = {n};", "git checkout -b {a}",
              "export {A}={b}", "    {a}.{b}({n})", "import {a}", "{a}: {n}", "  - {a}/{b}", "# {a} {b}",
              "func {a}() error {{", "let {a} = {b}.len();", "}}", "print({a})", "make -j{n} {a}"]

RULES = ["Always {a} before you {b}.", "Never {a} the {b} without asking.", "Prefer short answers about {a}.",
         "Use the {a} tool only when the user asks for {b}.", "Keep {a} and {b} separate.",
         "When unsure about {a}, ask the user.", "Report errors from {a} verbatim.",
         "Do not reveal the {a} to the user.", "The {a} directory is read only.",
         "Answer in the language of the user.", "Cite {a} when you quote it."]


def _w(r):
    return pools.cover_word(r, "word")


# mentions and request frames put together from parts (half of the mentions and requests):
# the words around a value and around a request vary, so that only the parameter's words
# and the value itself are a safe cue
LEADS = ["", "", "", "with ", "and ", "for ", "using ", "plus ", "where ", "also ", "having "]
CONNS = [" ", ": ", " = ", " is ", " of ", " as ", " -> ", " being ", " set to ", " should be ",
         " equal to ", " to be ", " must be ", " => ", " - ", " at ", " := ", " to ", " was ", " becomes "]
VFIRST = [" as the {label}", " for the {label}", " for {label}", " as {label}", " ({label})",
          " in the {label} field", " as its {label}", " for its {label}"]
PREFIXES = ["", "", "", "Please ", "Can you ", "Could you ", "I need you to ", "Hey, ", "Ok, ", "Hmm, ",
            "Right away: ", "Alright: ", "So, ", "Quick: ", "Would you please ", "Help me ",
            "Go ahead and ", "Now ", "Next, ", "If you can, ", "I'd like you to ", "Be a dear and ",
            "Just ", "Task: ", "Request: ", "Pls ", "I want you to ", "Try to ", "Mind if you ",
            "Would you be able to ", "For me, ", "One more thing: ", "Okay so ", "Ok now ", "Yo, ",
            "Hi! ", "Good morning, ", "Thanks in advance - ", "Urgent: ", "FYI I need to "]
SUFFIXES = ["", "", ".", ".", "?", " please.", " asap.", " if possible.", ", thanks.", " - cheers.",
            " right away.", " for me.", " now.", " today.", ", ty", " thank you!", " :)", "!", " ok?",
            " when you can.", ", if that works.", " - thx"]


def compose_frame(r, clause):
    pre = r.choice(PREFIXES)
    if r.random() < 0.08:
        pre = r.choice(["%s here - ", "From %s: ", "%s says: ", "Note from %s: "]) % pools.cover_word(r, "name")
    text = pre + clause + r.choice(SUFFIXES)
    return text[:1].upper() + text[1:] if r.random() < 0.8 else text


CHAT_JOINS = [" and ", ", ", ": ", " - ", "... ", ", so ", " but ", " - could you ", "; "]
CHAT_ENDS = [".", ".", "!", "?", "", " :)", "..."]


def chatter(r, lo, hi):
    """Plain words no template holds (common English, training sentences' words, invented):
    a request wrapped in them can only be read by finding its object in the offered tools."""
    _, words, _, _ = pools.cover_tables()
    held = held_words()
    out = []
    while len(out) < r.randint(lo, hi):
        w = r.choice(words) if r.random() < 0.85 else pools.cover_word(r, "word")
        if w.lower() not in held:
            out.append(w)
    return " ".join(out)


def noisy_frame(r, text):
    """A request with chatter before it ("Do me a favour and ..."), a context sentence before
    or after it, or both (--frame-noise)."""
    k = r.random()
    low = text[:1].lower() + text[1:] if not text[:2].isupper() else text
    if k < 0.35:
        return cap(chatter(r, 1, 4)) + r.choice(CHAT_JOINS) + low
    if k < 0.6:
        return cap(chatter(r, 3, 9)) + r.choice([". ", "! ", "? ", " - "]) + text
    if k < 0.85:
        sep = "" if text.endswith((".", "!", "?")) else r.choice([".", " -", ","])
        return text + sep + " " + cap(chatter(r, 2, 8)) + r.choice(CHAT_ENDS)
    return (cap(chatter(r, 2, 6)) + r.choice([". ", " - "]) + text + " " + cap(chatter(r, 2, 6))
            + r.choice(CHAT_ENDS))


INVENT_KINDS = ["text", "name", "place", "id", "email", "url", "path", "date", "time", "word", "int",
                "num", "money", "bool", "code", "enum", "arr", "obj", "query", "int", "bool", "word"]
_HELD_WORDS = None


def held_words():
    """The held-out generator's object and domain words: never invented into a training tool."""
    global _HELD_WORDS
    if _HELD_WORDS is None:
        import heldout
        _HELD_WORDS = {w for line in heldout.OBJECTS.strip().splitlines()
                       for part in (line.split("|")[0], line.split("|")[1]) for w in re.split(r"[ /]", part)}
    return _HELD_WORDS


def invent_word(r):
    held = held_words()
    while True:
        w = (r.choice(pools.COMMON_WORDS) if r.random() < 0.5 else pools.cover_word(r, "word")).lower()
        w = re.sub(r"[^a-z0-9]", "", w)
        if len(w) >= 2 and w not in held and not (w.endswith("s") and w[:-1] in held):
            return w


def invent_attr(r, kind):
    label = " ".join(invent_word(r) for _ in range(r.choice([1, 1, 2])))
    if kind == "enum":
        return "%s:enum(%s)" % (label, "/".join(dict.fromkeys(invent_word(r) for _ in range(r.randint(2, 5)))))
    if kind == "arr":
        return "%s:arr(%s)" % (label, r.choice(["word", "name", "int", "email", "id"]))
    if kind == "obj":
        return "%s:obj(%s=%s;%s=%s)" % (label, invent_word(r), r.choice(["word", "text", "int"]),
                                       invent_word(r) + "x", r.choice(["word", "num", "date"]))
    return "%s:%s" % (label, kind)


def invent_object(r):
    """An object no list holds: its noun, domain and attribute names are invented words, so a
    tool made of it can only be called by reading its name and schema."""
    noun = " ".join(invent_word(r) for _ in range(r.choice([1, 1, 2])))
    ident = r.choice(["*%s id:id", "*%s name:word", "*%s ref:id", "*%s key:word"]) % noun.split()[-1]
    attrs = [ident] + [invent_attr(r, r.choice(INVENT_KINDS)) for _ in range(r.randint(1, 5))]
    labels, uniq = set(), []
    for a in attrs:
        lab = a.lstrip("*").split(":")[0]
        if lab not in labels:
            labels.add(lab)
            uniq.append(a)
    return {"noun": noun, "plural": noun + ("es" if noun.endswith(("s", "x", "sh", "ch")) else "s"),
            "domain": invent_word(r), "actions": r.sample(list(VERBS), r.randint(2, 5)), "attrs": uniq,
            "invented": True}


class TrainLex(Lexicon):
    compose_mentions = (LEADS, CONNS, VFIRST)
    invent = 0.0  # share of concepts on invented objects (--invent-objects)

    def draw_concept(self, r):
        if self.invent and r.random() < self.invent:
            o = invent_object(r)
            return o, r.choice(o["actions"])
        return r.choice(self.concepts)

    compose_frame = staticmethod(compose_frame)
    noisy_frame = staticmethod(noisy_frame)
    think_candidate = 0.0  # share of one-call and near-miss refusal reasoning in THINK_*_CAND form

    def think_call(self, r, calls):
        if len(calls) == 1 and self.think_candidate and r.random() < self.think_candidate:
            c = calls[0]
            return r.choice(THINK_CALL_CAND).format(
                name=c.tool.name, a_noun=a_an(c.tool.obj["noun"]), say=self.verbs[c.tool.cls]["say"][0],
                keys=", ".join(c.args) if c.args else "no arguments")
        return Lexicon.think_call(self, r, calls)

    def think_refuse(self, r, want, near):
        if near and self.think_candidate and r.random() < self.think_candidate:
            return r.choice(THINK_REFUSE_CAND).format(
                near=near, a_noun=a_an(want[0]["noun"]), say=want[1] and self.verbs[want[1]]["say"][0])
        return Lexicon.think_refuse(self, r, want, near)

    objects = parse_objects(OBJECTS)
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
    think_call_forms = THINK_CALL
    think_multi_forms = THINK_MULTI
    think_answer_forms = THINK_ANSWER
    think_refuse_forms = THINK_REFUSE
    think_refuse_none = THINK_REFUSE_NONE
    refusal_forms = REFUSAL
    preambles = PREAMBLES
    system_prompts = SYSTEM_PROMPTS

    def __init__(self):
        for o in self.objects:
            if o["noun"] in ASKS:
                o["asks"] = ASKS[o["noun"]]
        self.setup()

    # values: (JSON value, how the user says it)
    def value(self, r, kind):
        c = pools
        if kind in ("text",):
            v = c.cover_sentence(r) if r.random() < 0.6 else c.cover_phrase(r, 1, 5)
            return v, v
        if kind == "query":
            v = c.cover_phrase(r, 1, 4)
            return v, v
        if kind == "name":
            v = c.cover_word(r, "name")
            if r.random() < 0.4:
                v += " " + c.cover_word(r, "name")
            return v, v
        if kind == "place":
            v = c.cover_place(r)
            return v, v
        if kind == "word":
            v = c.cover_word(r, "word")
            if r.random() < 0.2:
                v += r.choice(["-", "_", "."]) + c.cover_word(r, "word")
            return v, v
        if kind == "id":
            k = r.random()
            if k < 0.3:
                v = "%s-%d" % ("".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(r.randint(2, 4))),
                               r.randint(10, 999999))
            elif k < 0.55:
                v = "".join(r.choice("0123456789abcdef") for _ in range(r.choice([6, 8, 10, 12])))
            elif k < 0.75:
                v = c.cover_word(r, "word") + r.choice(["_", "-", ""]) + str(r.randint(1, 9999))
            else:
                v = pools.char_word(r, 4, 12)
            return v, v
        if kind == "email":
            v = "%s%s%s@%s.%s" % (c.cover_word(r, "word").lower(), r.choice([".", "_", ""]),
                                  c.cover_word(r, "word").lower() if r.random() < 0.6 else str(r.randint(1, 99)),
                                  c.cover_word(r, "word").lower(), r.choice(["com", "org", "net", "io", "dev", "co.uk", "test"]))
            return v, v
        if kind == "url":
            v = "https://%s.%s/%s" % (c.cover_word(r, "word").lower(), r.choice(["com", "org", "io", "net", "dev"]),
                                      "/".join(c.cover_word(r, "word") for _ in range(r.randint(0, 3))))
            if r.random() < 0.2:
                v += "?%s=%d" % (c.cover_word(r, "word").lower(), r.randint(1, 999))
            return v, v
        if kind == "path":
            v = c.cover_dir(r) + "/" + c.cover_stem(r) + r.choice([".txt", ".md", ".py", ".json", ".csv", ".log", ".yaml", ".c", "", ".tar.gz", ".png"])
            return v, v
        if kind == "date":
            y, m, d = r.randint(2019, 2031), r.randint(1, 12), r.randint(1, 28)
            iso = "%04d-%02d-%02d" % (y, m, d)
            if r.random() < 0.15:
                return iso, "%s %d, %d" % (pools.MONTHS[m - 1], d, y)
            return iso, iso
        if kind == "time":
            v = "%02d:%02d" % (r.randint(0, 23), r.choice([0, 5, 10, 15, 20, 30, 40, 45, 50, 55, r.randint(0, 59)]))
            return v, v
        if kind == "code":
            v = r.choice(CODE_LINES).format(a=_w(r), b=_w(r), A=_w(r).upper(), n=r.randint(1, 99)).strip()
            return v, v
        if kind == "code5":
            v = "".join(r.choice("0123456789") for _ in range(r.choice([4, 5, 5, 6])))
            return v, v
        if kind == "phone":
            v = "+%d %d %d" % (r.randint(1, 99), r.randint(100, 999), r.randint(1000, 9999999))
            return v, v
        if kind == "lang":
            v = r.choice(["French", "German", "Spanish", "Italian", "Japanese", "Korean", "Dutch",
                          "Polish", "Turkish", "Greek", "Hindi", "Swahili", "fr", "de", "es", "pt-BR",
                          c.cover_word(r, "name") + r.choice(["ish", "ese", "ian", ""])])
            return v, v
        if kind == "expr":
            a, b = r.randint(2, 9999), r.randint(2, 999)
            v = r.choice(["%d * %d", "%d + %d", "%d - %d", "%d / %d", "(%d + %d) * 3", "%d ^ 2 + %d",
                          "sqrt(%d) + %d", "%d %% %d"]) % (a, b)
            return v, v
        if kind == "int":
            v = r.choice([r.randint(1, 10), r.randint(1, 100), r.randint(1, 5000)])
            return v, str(v)
        if kind in ("num", "money"):
            v = round(r.uniform(0.1, 5000), r.choice([0, 1, 2]))
            v = int(v) if float(v).is_integer() else v
            return v, str(v)
        if kind == "currency":
            v = r.choice(pools.CURRENCIES + ["".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(3))])
            return v, v
        raise ValueError(kind)

    def chat(self, r, with_tools=False):
        k = r.random()
        if k < 0.55 or with_tools:
            u, a = r.choice(CHAT)
            if r.random() < 0.2:
                u = u.lower().rstrip("!.?")
            return u, a, r.choice(CHAT_WHY)
        if k < 0.8:
            op = r.choice(["+", "-", "*"])
            x, y = (r.randint(2, 99), r.randint(2, 99)) if op != "*" else (r.randint(2, 20), r.randint(2, 12))
            v = {"+": x + y, "-": x - y, "*": x * y}[op]
            u = r.choice(["What is %d %s %d?", "%d %s %d = ?", "How much is %d %s %d?"]) % (x, op, y)
            return u, "%d %s %d = %d." % (x, op, y, v), "Simple arithmetic, and no tools are offered: %d. I'll answer directly." % v
        text = pools.cover_sentence(r)
        u = r.choice(["Repeat after me: %s", "Say exactly this: %s", "Echo: %s"]) % text
        return u, text, "The user wants the text repeated exactly. No tool needed."

    def long_system(self, r, chars):
        """An agent-shaped system prompt of about chars characters: role, rules, notes,
        a file tree, code, a task log."""
        out = [r.choice(["You are %s, a coding agent working in the repository %s.",
                         "You are %s, an operations assistant for the %s team.",
                         "You are %s. You help the user with the %s project."]) % (
            cap(_w(r)), _w(r))]
        while sum(len(x) for x in out) < chars:
            k = r.random()
            if k < 0.25:
                out.append("## " + cap(pools.cover_phrase(r, 1, 3)) + "\n" + "\n".join(
                    "- " + r.choice(RULES).format(a=_w(r), b=_w(r)) for _ in range(r.randint(3, 8))))
            elif k < 0.5:
                out.append(" ".join(pools.cover_sentence(r) for _ in range(r.randint(3, 8))))
            elif k < 0.7:
                out.append("```\n" + "\n".join(r.choice(CODE_LINES).format(
                    a=_w(r), b=_w(r), A=_w(r).upper(), n=r.randint(1, 99)) for _ in range(r.randint(4, 14))) + "\n```")
            elif k < 0.85:
                root = pools.cover_dir(r)
                out.append("Files:\n" + "\n".join("  %s/%s" % (root, pools.cover_stem(r) + r.choice([".py", ".md", ".c", ".json", ""]))
                                                  for _ in range(r.randint(4, 12))))
            else:
                out.append("Log:\n" + "\n".join("[%02d:%02d] %s" % (r.randint(0, 23), r.randint(0, 59), pools.cover_sentence(r))
                                                for _ in range(r.randint(3, 8))))
        return "\n\n".join(out)


_LEX = None


def lexicon():
    global _LEX
    if _LEX is None:
        _LEX = TrainLex()
    return _LEX


if __name__ == "__main__":
    import json
    import sys
    from toolgen import ProcGen
    lex = lexicon()
    print(len(lex.objects), "objects,", len(lex.concepts), "concepts,", len(lex.by_domain), "domains", file=sys.stderr)
    for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        r = random.Random(i)
        g = ProcGen(lex, r)
        kind = ["single", "parallel", "refusal", "no_tool", "chat"][i % 5]
        print(json.dumps(g.conversation(kind, r.random() < 0.5), ensure_ascii=False))
