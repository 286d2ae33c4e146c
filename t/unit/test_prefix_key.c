/* Volatile-line normalisation and the prefix key / size estimate of bodies. */
#include <string.h>

#include "tap.h"
#include "api/llm_prefix_key.h"
#include "api/llm_volatile.h"

static llm_prefix_info  info_a, info_b;

/* Key of a body, "" when there is none. */
static const char *
key(const char *body, llm_prefix_info *info)
{
    llm_prefix_key(body, strlen(body), NULL, info);
    return info->key;
}

static int
pk(const char *body, const llm_prefix_opts *o, llm_prefix_info *info)
{
    return llm_prefix_key(body, strlen(body), o, info);
}

static int
same_key(const char *a, const char *b)
{
    return key(a, &info_a)[0] && strcmp(key(a, &info_a), key(b, &info_b)) == 0;
}

static int
other_key(const char *a, const char *b)
{
    return key(a, &info_a)[0] && key(b, &info_b)[0]
           && strcmp(info_a.key, info_b.key) != 0;
}

static void
test_volatile(void)
{
    char          buf[256];
    const char   *t;
    size_t        n;

    ok(llm_volatile_line(NULL, "x-anthropic-billing-header: cc_version=2.1.1.abc; "
                         "cc_entrypoint=cli; cch=36ee5;", 72),
       "the billing header line is volatile");
    ok(llm_volatile_line(NULL, "X-Anthropic-Billing-Header: cch=1;", 34),
       "header names compare without case");
    ok(!llm_volatile_line(NULL, "You are Claude Code.", 20), "other lines are not");
    ok(!llm_volatile_line(NULL, "  x-anthropic-billing-header: cch=1;", 36),
       "only at the start of a line");

    t = "x-anthropic-billing-header: cc_version=2.1.1.abc; cch=36ee5;\n"
        "You are a helpful agent.\nSecond line";
    n = llm_volatile_strip(NULL, t, strlen(t), buf);
    buf[n] = '\0';
    is_str(buf, "You are a helpful agent.\nSecond line",
           "a leading volatile line goes with its newline");

    t = "first\nx-anthropic-billing-header: cch=00000;";
    n = llm_volatile_strip(NULL, t, strlen(t), buf);
    buf[n] = '\0';
    is_str(buf, "first\n", "a last volatile line without newline goes too");

    t = "x-anthropic-billing-header: cch=1;";
    is_int(llm_volatile_strip(NULL, t, strlen(t), buf), 0,
           "a block that is only the header becomes empty");

    t = "a\n\nb\n";
    n = llm_volatile_strip(NULL, t, strlen(t), buf);
    ok(n == 5 && memcmp(buf, t, 5) == 0, "other text is copied unchanged");

    strcpy(buf, "keep\nx-anthropic-billing-header: cch=2;\nme");
    n = llm_volatile_strip(NULL, buf, strlen(buf), buf);
    buf[n] = '\0';
    is_str(buf, "keep\nme", "in place");

    {
        /* another list (llm_prompt_strip), and none (off) */
        static const char *const mine[] = { "Date:", "session-id:" };
        llm_volatile_set  set = { mine, 2 }, off = { NULL, 0 };

        ok(llm_volatile_line(&set, "date: Tue", 9), "a configured prefix, without case");
        ok(!llm_volatile_line(&set, "x-anthropic-billing-header: cch=1;", 34),
           "the default one is not in a configured list");
        ok(!llm_volatile_line(&off, "x-anthropic-billing-header: cch=1;", 34), "off: nothing is volatile");
        ok(llm_volatile_default()->n == 1, "one default prefix");
    }
    {
        /* a conversation: system messages lose the lines, other roles keep them */
        json_t *msgs = json_loads("[{\"role\":\"system\",\"content\":"
            "\"x-anthropic-billing-header: cc_version=2.1.1.abc; cch=36ee5;\\nYou are an agent.\"},"
            "{\"role\":\"user\",\"content\":\"x-anthropic-billing-header: cch=1;\\nhi\"},"
            "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]", 0, NULL);

        is_int(llm_volatile_strip_messages(NULL, msgs), 1, "one system message changed");
        is_str(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
               "You are an agent.", "the billing line is gone before the render");
        is_str(json_string_value(json_object_get(json_array_get(msgs, 1), "content")),
               "x-anthropic-billing-header: cch=1;\nhi", "a user message is left as sent");
        is_int(llm_volatile_strip_messages(NULL, msgs), 0, "stripping again changes nothing");
        json_decref(msgs);
    }
}

/* Claude Code's shape: system blocks (billing header first), tools, and a
 * conversation that grows turn by turn. */
#define CC_SYSTEM(cch) \
    "\"system\":[{\"type\":\"text\",\"text\":\"x-anthropic-billing-header: " \
    "cc_version=2.1.177." cch "; cc_entrypoint=cli; cch=" cch ";\"}," \
    "{\"type\":\"text\",\"text\":\"You are Claude Code.\"," \
    "\"cache_control\":{\"type\":\"ephemeral\"}}]"
#define CC_TOOLS \
    "\"tools\":[{\"name\":\"Bash\",\"description\":\"Run a command\"," \
    "\"input_schema\":{\"type\":\"object\",\"properties\":{\"command\":" \
    "{\"type\":\"string\"}}}}]"

static void
test_anthropic(void)
{
    const char *turn1 =
        "{\"model\":\"tiny\",\"max_tokens\":64," CC_SYSTEM("36ee5") "," CC_TOOLS ","
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
        "\"text\":\"fix the build\",\"cache_control\":{\"type\":\"ephemeral\"}}]}]}";
    const char *turn2 =
        "{\"model\":\"tiny\",\"max_tokens\":64," CC_SYSTEM("0aaa9") "," CC_TOOLS ","
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
        "\"text\":\"fix the build\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\","
        "\"name\":\"Bash\",\"input\":{\"command\":\"make\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
        "\"tool_use_id\":\"t1\",\"content\":\"ok\",\"cache_control\":"
        "{\"type\":\"ephemeral\"}}]}]}";
    const char *other_session =
        "{\"model\":\"tiny\",\"max_tokens\":64," CC_SYSTEM("36ee5") "," CC_TOOLS ","
        "\"messages\":[{\"role\":\"user\",\"content\":\"write the docs\"}]}";
    const char *other_tools =
        "{\"model\":\"tiny\",\"max_tokens\":64," CC_SYSTEM("36ee5") ","
        "\"tools\":[],"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
        "\"text\":\"fix the build\"}]}]}";
    const char *other_model =
        "{\"model\":\"big\",\"max_tokens\":64," CC_SYSTEM("36ee5") "," CC_TOOLS ","
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
        "\"text\":\"fix the build\"}]}]}";
    const char *reordered =
        "{ \"messages\" : [ { \"content\" : [ { \"text\" : \"fix the build\" , "
        "\"type\" : \"text\" } ] , \"role\" : \"user\" } ] , " CC_TOOLS ", "
        CC_SYSTEM("abcde") ", \"model\" : \"tiny\" }";
    const char *plain_system =
        "{\"model\":\"tiny\",\"system\":\"x-anthropic-billing-header: cch=1;\\n"
        "You are Claude Code.\"," CC_TOOLS ",\"messages\":[{\"role\":\"user\","
        "\"content\":\"fix the build\"}]}";
    const char *plain_system2 =
        "{\"model\":\"tiny\",\"system\":\"x-anthropic-billing-header: cch=2;\\n"
        "You are Claude Code.\"," CC_TOOLS ",\"messages\":[{\"role\":\"user\","
        "\"content\":\"fix the build\"}]}";
    const char *tool_with_marker =
        "{\"model\":\"tiny\",\"tools\":[{\"name\":\"Bash\",\"input_schema\":{},"
        "\"cache_control\":{\"type\":\"ephemeral\"}}],\"messages\":[{\"role\":"
        "\"user\",\"content\":\"hi\"}]}";
    const char *tool_without =
        "{\"model\":\"tiny\",\"tools\":[{\"name\":\"Bash\",\"input_schema\":{}}],"
        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    ok(strlen(key(turn1, &info_a)) == LLM_PREFIX_KEY_LEN
       && strspn(info_a.key, "0123456789abcdef") == LLM_PREFIX_KEY_LEN,
       "the key is %d lowercase hex digits", LLM_PREFIX_KEY_LEN);
    ok(same_key(turn1, turn2),
       "turn 2 of a session has the key of turn 1 (new cch, history, markers)");
    ok(other_key(turn1, other_session),
       "another first user message is another key");
    ok(other_key(turn1, other_tools), "other tools are another key");
    ok(other_key(turn1, other_model), "another model is another key");
    ok(same_key(turn1, reordered),
       "key order, spacing and part fields do not matter");
    ok(same_key(plain_system, plain_system2),
       "a volatile line inside a string system prompt is normalised");
    ok(same_key(tool_with_marker, tool_without),
       "cache_control on a tool does not matter");
}

static void
test_openai(void)
{
    const char *turn1 =
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"system\",\"content\":"
        "\"You are a coding agent.\"},{\"role\":\"user\",\"content\":\"list files\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"ls\","
        "\"parameters\":{\"type\":\"object\"}}}],\"stream\":true}";
    const char *turn2 =
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"system\",\"content\":"
        "\"You are a coding agent.\"},{\"role\":\"user\",\"content\":\"list files\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\","
        "\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"a.c b.c\"},"
        "{\"role\":\"user\",\"content\":\"now build\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"ls\","
        "\"parameters\":{\"type\":\"object\"}}}],\"temperature\":0}";
    const char *other_system =
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"system\",\"content\":"
        "\"You are a poet.\"},{\"role\":\"user\",\"content\":\"list files\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"ls\","
        "\"parameters\":{\"type\":\"object\"}}}]}";
    const char *developer =
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"developer\",\"content\":"
        "\"You are a coding agent.\"},{\"role\":\"user\",\"content\":\"list files\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"ls\","
        "\"parameters\":{\"type\":\"object\"}}}]}";
    const char *parts =
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"system\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"You are a coding agent.\"}]},{\"role\":"
        "\"user\",\"content\":[{\"type\":\"text\",\"text\":\"list files\"}]}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"parameters\":"
        "{\"type\":\"object\"},\"name\":\"ls\"}}]}";

    ok(same_key(turn1, turn2),
       "OpenAI: later turns keep the key (sampling options do not matter)");
    ok(other_key(turn1, other_system), "OpenAI: another system prompt");
    ok(other_key(turn1, developer), "OpenAI: the role is part of the key");
    ok(same_key(turn1, parts), "OpenAI: text parts count as their text");
}

static void
test_completions(void)
{
    char             long_a[3000], long_b[3000], body_a[3100], body_b[3100];
    llm_prefix_opts  o = { 16, 0 };

    memset(long_a, 'a', sizeof(long_a) - 1);
    long_a[sizeof(long_a) - 1] = '\0';
    memcpy(long_b, long_a, sizeof(long_a));
    long_b[2000] = 'b';                              /* differs after 1024 */
    snprintf(body_a, sizeof(body_a), "{\"model\":\"m\",\"prompt\":\"%s\"}", long_a);
    snprintf(body_b, sizeof(body_b), "{\"model\":\"m\",\"prompt\":\"%s\"}", long_b);
    ok(same_key(body_a, body_b),
       "completions: only the first 1024 bytes of the prompt make the key");
    long_b[1000] = 'b';
    snprintf(body_b, sizeof(body_b), "{\"model\":\"m\",\"prompt\":\"%s\"}", long_b);
    ok(other_key(body_a, body_b), "completions: a change within them counts");

    pk("{\"prompt\":\"0123456789abcdefXXX\"}", &o, &info_a);
    pk("{\"prompt\":\"0123456789abcdefYYY\"}", &o, &info_b);
    ok(info_a.key[0] && strcmp(info_a.key, info_b.key) == 0,
       "completions: prompt_bytes sets how many");
    pk("{\"prompt\":\"0123456789abcdeXYYY\"}", &o, &info_b);
    ok(strcmp(info_a.key, info_b.key) != 0, "completions: byte 16 counts");

    ok(same_key("{\"prompt\":[\"same start\",\"other\"]}",
                "{\"prompt\":\"same start\"}"),
       "completions: a batch is keyed by its first prompt");
    ok(same_key("{\"prompt\":[[1,2,3],[4]]}", "{\"prompt\":[1,2,3]}"),
       "completions: token-id prompts are keyed by their ids");
    ok(other_key("{\"prompt\":[1,2,3]}", "{\"prompt\":[1,2,4]}"),
       "completions: other ids, other key");
    ok(other_key("{\"prompt\":\"x\"}", "{\"messages\":[{\"role\":\"user\","
                 "\"content\":\"x\"}]}"),
       "completions and chat with the same text differ");
}

static void
test_no_key(void)
{
    char  deep[200];

    ok(pk("", NULL, &info_a) == -1 && info_a.key[0] == '\0'
       && info_a.prompt_tokens_estimate == -1, "no body: no key");
    ok(pk("{\"model\":", NULL, &info_a) == -1, "broken JSON: none");
    ok(pk("[1,2]", NULL, &info_a) == -1, "not an object: none");
    ok(pk("{\"model\":\"m\"}", NULL, &info_a) == -1,
       "neither messages nor prompt: none");
    ok(pk("{\"messages\":\"hi\"}", NULL, &info_a) == -1,
       "messages that are not an array: none");

    strcpy(deep, "{\"prompt\":");
    memset(deep + 10, '[', 70);
    memset(deep + 80, ']', 70);
    strcpy(deep + 150, "}");
    ok(pk(deep, NULL, &info_a) == -1, "JSON nested beyond 64 levels: none");
    memset(deep + 10, ' ', 10);
    memset(deep + 140, ' ', 10);
    ok(pk(deep, NULL, &info_a) == 0, "60 levels are read");
}

static void
test_estimate(void)
{
    llm_prefix_info  in;

    pk("{\"prompt\":\"abcdefgh\"}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 2, "8 ASCII bytes are 2 tokens");
    pk("{\"prompt\":\"abcdefghi\"}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 3, "9 ASCII bytes round up to 3");
    pk("{\"prompt\":[5,6,7,8,9]}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 5, "token ids count exactly");
    pk("{\"prompt\":\"\xe4\xbd\xa0\xe5\xa5\xbd\"}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 2, "each non-ASCII character is a token");
    /* keys and values of messages: role(4) user(4) content(7) abcdefghijklm(13) */
    pk("{\"model\":\"a-long-model-name\",\"max_tokens\":100,"
                   "\"messages\":[{\"role\":\"user\",\"content\":\"abcdefghijklm\"}]}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 7,
           "messages count keys and values; other fields do not");
    pk("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                   "\"text\":\"abcd\",\"cache_control\":{\"type\":\"ephemeral\"}}]}]}", NULL, &in);
    /* role user content type text text abcd = 4+4+7+4+4+4+4 = 31 -> 8 */
    is_int(in.prompt_tokens_estimate, 8, "cache_control is left out");
}

/* The body is scanned once, not decoded: its syntax is still checked. */
static void
test_scan(void)
{
    llm_prefix_info  in;

    ok(same_key("{\"model\":\"m\",\"system\":\"s\",\"tools\":[{\"name\":\"t\"}],"
                "\"messages\":[{\"role\":\"user\",\"content\":\"u\"}]}",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"u\"}],"
                "\"tools\":[{\"name\":\"t\"}],\"max_tokens\":5,\"system\":\"s\","
                "\"model\":\"m\"}"),
       "fields in any order, messages first included");
    ok(same_key("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],"
                "\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}",
                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}"),
       "a repeated key: the last one counts, as in a decoder");
    ok(same_key("{\"prompt\":\"caf\\u00e9 \\\"x\\\"\"}", "{\"prompt\":\"caf\xc3\xa9 \\\"x\\\"\"}"),
       "escapes are compared decoded");
    ok(pk("{\"prompt\":\"a\" x}", NULL, &in) == -1, "garbage inside: none");
    ok(pk("{\"prompt\":\"a\"} x", NULL, &in) == -1, "garbage after the object: none");
    ok(pk("{\"prompt\":\"a\\qb\"}", NULL, &in) == -1, "an unknown escape: none");
    ok(pk("{\"prompt\":\"a\\u12\"}", NULL, &in) == -1, "a short \\u escape: none");
    ok(pk("{\"prompt\":\"a\nb\"}", NULL, &in) == -1, "a raw control character: none");
    ok(pk("{\"prompt\":\"a\",}", NULL, &in) == -1, "a trailing comma: none");
    ok(pk("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},],\"model\":\"m\"}",
          NULL, &in) == -1, "a trailing comma in messages: none");
    ok(pk("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}, {\"x\":}]}", NULL, &in) == -1,
       "a broken message after the first user message: none");
    ok(pk("{\"messages\":[{\"role\":\"user\"", NULL, &in) == -1, "a cut body: none");

    pk("{\"prompt\":\"a\\nb\\\"\"}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 1, "an escape is one character (4 in all)");
    pk("{\"prompt\":\"\\u00e9\\ud83d\\ude00x\"}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 3,
           "\\u escapes: one character each, a surrogate pair one");
    pk("{\"prompt\":\"abcd\",\"max_tokens\":5,\"metadata\":{\"k\":\"vvvvvvvvvvvv\"}}", NULL, &in);
    is_int(in.prompt_tokens_estimate, 1, "fields the model does not read are not counted");
}

/* Responses bodies: instructions and input items key as a conversation. */
static void
test_responses(void)
{
    llm_prefix_info  in;

    ok(same_key("{\"model\":\"m\",\"instructions\":\"Be brief.\",\"input\":\"Hi\"}",
                "{\"model\":\"m\",\"instructions\":\"Be brief.\",\"input\":[{\"role\":"
                "\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]},"
                "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                "\"output_text\",\"text\":\"Hello.\"}]},{\"role\":\"user\",\"content\":"
                "\"More\"}],\"stream\":true}"),
       "responses: a string input keys as the first turn of its items");
    ok(other_key("{\"model\":\"m\",\"instructions\":\"Be brief.\",\"input\":\"Hi\"}",
                 "{\"model\":\"m\",\"instructions\":\"Be long.\",\"input\":\"Hi\"}"),
       "responses: other instructions, another key");
    ok(other_key("{\"model\":\"m\",\"input\":\"Hi\"}", "{\"model\":\"m\",\"input\":\"Bye\"}"),
       "responses: another first message, another key");
    ok(same_key("{\"model\":\"m\",\"input\":[{\"type\":\"message\",\"role\":\"developer\","
                "\"content\":\"D\"},{\"role\":\"user\",\"content\":\"Hi\"}]}",
                "{\"model\":\"m\",\"input\":[{\"type\":\"message\",\"role\":\"developer\","
                "\"content\":\"D\"},{\"role\":\"user\",\"content\":\"Hi\"},{\"type\":"
                "\"function_call_output\",\"call_id\":\"c\",\"output\":\"x\"}]}"),
       "responses: items after the first user message do not change it");
    is_int(pk("{\"model\":\"m\",\"instructions\":\"abcd\",\"input\":\"efgh\"}", NULL, &in),
           0, "responses: a key");
    is_int(in.prompt_tokens_estimate, 2,
           "responses: the estimate counts instructions and input (8 ASCII bytes)");
    ok(pk("{\"model\":\"m\",\"input\":[\"a\",\"b\"]}", NULL, &in) == 0,
       "an embeddings-like input of texts still gets a key");
}

int
main(void)
{
    test_volatile();
    test_anthropic();
    test_openai();
    test_completions();
    test_no_key();
    test_estimate();
    test_scan();
    test_responses();
    /* llm_route's condition */
    {
        long min = -1;
        ok(llm_route_condition("if_prompt_tokens>4096", 21, &min) == 0 && min == 4096,
           "if_prompt_tokens>4096: 4096");
        ok(llm_route_condition("if_prompt_tokens>0", 18, &min) == 0 && min == 0, "if_prompt_tokens>0: 0");
        ok(llm_route_condition("if_prompt_tokens>", 17, &min) != 0, "no number: refused");
        ok(llm_route_condition("if_tokens>5", 11, &min) != 0, "another name: refused");
        ok(llm_route_condition("if_prompt_tokens>-1", 19, &min) != 0, "a sign: refused");
        ok(llm_route_condition("if_prompt_tokens>12x", 20, &min) != 0, "trailing bytes: refused");
        ok(llm_route_condition("if_prompt_tokens>99999999999999999999", 37, &min) != 0,
           "too large: refused");
        ok(llm_route_condition("if_prompt_tokens>5;", 18, &min) == 0 && min == 5,
           "only len bytes are read");
    }

    return done_testing();
}
