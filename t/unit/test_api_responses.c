/*
 * OpenAI Responses API: request parsing into the IR (input items, tools,
 * text.format, refusals with the field's path) and the formatter's bytes
 * (the response object; the semantic stream events, their order and
 * sequence numbers).
 */
#include <string.h>

#include "tap.h"
#include "api/llm_formatter.h"
#include "api/llm_responses.h"

static llm_api_limits lim;

static int
parse(const char *body, llm_request *req, llm_api_error *err)
{
    memset(err, 0, sizeof(*err));
    return llm_responses_parse(body, strlen(body), &lim, req, err);
}

static const char *
msg_str(const llm_request *req, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(req->messages, i),
                                             key));
}

/* body, expected param, substring of the message, status */
static const struct {
    const char *body, *param, *msg;
} bad[] = {
    { "{\"model\":\"m\"}", "input", "Missing required parameter: 'input'" },
    { "{\"input\":[]}", "input", "empty array" },
    { "{\"input\":5}", "input", "a string or an array of input items" },
    { "{\"input\":[5]}", "input[0]", "an input item object" },
    { "{\"input\":\"hi\",\"previous_response_id\":\"resp_1\"}",
      "previous_response_id", "no llm_responses_store is configured" },
    { "{\"input\":\"hi\",\"conversation\":\"conv_1\"}", "conversation",
      "Unsupported parameter" },
    { "{\"input\":\"hi\",\"background\":true}", "background",
      "background responses are not supported" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"custom\",\"name\":\"p\"}]}",
      "tools[0].type", "tools of type 'custom' are not supported" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"namespace\",\"tools\":[]}]}",
      "tools[0].name", "a non-empty string" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"namespace\",\"name\":\"n\"}]}",
      "tools[0].tools", "an array of function tools" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"namespace\",\"name\":\"n\","
      "\"tools\":[{\"type\":\"web_search\"}]}]}", "tools[0].tools[0].type",
      "a namespace holds function tools only" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":\"n__f\"},"
      "{\"type\":\"namespace\",\"name\":\"n\",\"tools\":[{\"type\":\"function\","
      "\"name\":\"f\"}]}]}", "tools[1].tools[0].name",
      "the tool name 'n__f' is already used by tools[0]" },
    { "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\","
      "\"namespace\":3}]}", "input[0].namespace", "a string" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"function\"}]}",
      "tools[0].name", "expected a string" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":\"f\","
      "\"parameters\":3}]}", "tools[0].parameters", "JSON Schema object" },
    { "{\"input\":\"hi\",\"tool_choice\":{\"type\":\"file_search\"}}",
      "tool_choice.type", "'file_search' is not supported" },
    { "{\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],"
      "\"tool_choice\":{\"type\":\"function\",\"name\":\"g\"}}",
      "tool_choice.name", "no function named 'g'" },
    { "{\"input\":\"hi\",\"tool_choice\":\"required\"}", "tool_choice",
      "needs 'tools'" },
    { "{\"input\":[{\"role\":\"bot\",\"content\":\"x\"}]}", "input[0].role",
      "but got 'bot'" },
    { "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
      "\"image_url\":\"x\"}]}]}", "input[0].content[0].type",
      "'input_image' are not supported" },
    { "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\"}]}]}",
      "input[0].content[0].text", "expected a string" },
    { "{\"input\":[{\"type\":\"computer_call\"}]}", "input[0].type",
      "type 'computer_call' are not supported" },
    { "{\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]}",
      "input[0].type", "item references are not supported" },
    { "{\"input\":[{\"type\":\"function_call\",\"name\":\"f\","
      "\"arguments\":\"{}\"}]}", "input[0].call_id", "Missing required" },
    { "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\","
      "\"arguments\":\"{bad\"}]}", "input[0].arguments", "could not be parsed" },
    { "{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c9\","
      "\"output\":\"x\"}]}", "input[0].call_id", "no function_call item" },
    { "{\"input\":[{\"type\":\"reasoning\",\"summary\":[{\"type\":\"x\"}]}]}",
      "input[0].summary[0]", "summary_text" },
    { "{\"input\":[{\"type\":\"reasoning\",\"summary\":[{\"type\":"
      "\"summary_text\",\"text\":\"t\"}]}]}", "input", "only reasoning" },
    { "{\"input\":\"hi\",\"text\":{\"format\":{\"type\":\"xml\"}}}",
      "text.format.type", "but got 'xml'" },
    { "{\"input\":\"hi\",\"text\":{\"format\":{\"type\":\"json_schema\","
      "\"name\":\"x\"}}}", "text.format.schema", "Missing required" },
    { "{\"input\":\"hi\",\"max_output_tokens\":0}", "max_output_tokens",
      "at least 1" },
    { "{\"input\":\"hi\",\"temperature\":3}", "temperature", "from 0 to 2" },
    { "{\"input\":\"hi\",\"reasoning\":{\"effort\":\"max\"}}",
      "reasoning.effort", "but got 'max'" },
    { "{\"input\":\"hi\",\"metadata\":{\"k\":1}}", "metadata.k",
      "expected a string" },
    { "{\"input\":\"hi\",\"instructions\":7}", "instructions",
      "expected a string" },
    { "{\"input\":\"hi\",\"truncation\":\"cut\"}", "truncation",
      "'disabled' or 'auto'" },
};

static void
test_bad(void)
{
    llm_request    req;
    llm_api_error  err;
    size_t         i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i].body, &req, &err);

        ok(rc == -1 && err.status == 400, "400 for %s", bad[i].body);
        is_str(err.param, bad[i].param, "  param %.100s", err.param);
        ok(strstr(err.message, bad[i].msg) != NULL, "  message has '%s'",
           bad[i].msg);
        if (strstr(err.message, bad[i].msg) == NULL) {
            printf("#   message: %s\n", err.message);
        }
        ok(req.messages == NULL && req.api == LLM_API_RESPONSES,
           "  the request is left empty");
        llm_request_free(&req);
    }
}

static void
test_string_input(void)
{
    llm_request    req;
    llm_api_error  err;

    ok(parse("{\"model\":\"tiny\",\"input\":\"Hello\",\"instructions\":"
             "\"Be brief.\",\"max_output_tokens\":20,\"temperature\":0.5,"
             "\"top_p\":0.9,\"stream\":true,\"store\":false,"
             "\"metadata\":{\"k\":\"v\"}}", &req, &err) == 0,
       "a string input parses");
    is_int(req.api, LLM_API_RESPONSES, "api kind");
    is_str(req.model, "tiny", "model");
    is_int(json_array_size(req.messages), 2, "instructions and the input");
    is_str(msg_str(&req, 0, "role"), "system", "instructions: system");
    is_str(msg_str(&req, 0, "content"), "Be brief.", "its text");
    is_str(msg_str(&req, 1, "role"), "user", "input: user");
    is_str(msg_str(&req, 1, "content"), "Hello", "its text");
    is_int(req.max_tokens, 20, "max_output_tokens -> max_tokens");
    ok(req.sampling.temperature == 0.5
       && (req.sampling.set & LLM_SAMPLING_SET_TEMPERATURE), "temperature");
    ok(req.sampling.top_p == 0.9 && (req.sampling.set & LLM_SAMPLING_SET_TOP_P),
       "top_p");
    ok(req.stream == 1, "stream");
    is_str(json_string_value(json_object_get(req.metadata, "k")), "v",
           "metadata kept");
    is_str(json_string_value(json_object_get(req.response_fields,
                                             "instructions")),
           "Be brief.", "the response repeats the instructions");
    is_str(json_string_value(json_object_get(req.response_fields,
                                             "tool_choice")),
           "auto", "and tool_choice's default");
    is_str(json_string_value(json_object_get(json_object_get(json_object_get(
               req.response_fields, "text"), "format"), "type")),
           "text", "and text.format's default");
    ok(req.response_format == NULL && req.tools == NULL,
       "no response_format, no tools");
    llm_request_free(&req);

    ok(parse("{\"input\":\"x\",\"store\":true}", &req, &err) == 0,
       "store: true is accepted (nothing is kept)");
    llm_request_free(&req);
}

static void
test_items(void)
{
    llm_request    req;
    llm_api_error  err;
    json_t        *m, *calls;

    ok(parse("{\"input\":["
             "{\"type\":\"message\",\"role\":\"developer\",\"content\":"
               "[{\"type\":\"input_text\",\"text\":\"Rules.\"}]},"
             "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
               "\"text\":\"a\"},{\"type\":\"input_text\",\"text\":\"b\"}]},"
             "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],"
               "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"think\"}]},"
             "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\","
               "\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"},"
             "{\"type\":\"function_call\",\"call_id\":\"call_2\","
               "\"name\":\"get_time\",\"arguments\":\"\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"call_1\","
               "\"output\":\"18C\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"call_2\","
               "\"output\":[{\"type\":\"input_text\",\"text\":\"noon\"}]},"
             "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_1\","
               "\"status\":\"completed\",\"content\":[{\"type\":\"output_text\","
               "\"text\":\"It is 18C.\",\"annotations\":[]}]},"
             "{\"role\":\"user\",\"content\":\"thanks\"}"
             "]}", &req, &err) == 0, "an item list parses");
    if (req.messages == NULL) {
        printf("# %s: %s\n", err.param, err.message);
        return;
    }
    is_int(json_array_size(req.messages), 7, "seven turns");
    is_str(msg_str(&req, 0, "role"), "system", "developer -> system");
    is_str(msg_str(&req, 1, "content"), "a\nb", "text parts joined");
    m = json_array_get(req.messages, 2);
    is_str(msg_str(&req, 2, "role"), "assistant", "the calls' assistant turn");
    is_str(msg_str(&req, 2, "content"), "", "with no text");
    is_str(msg_str(&req, 2, "reasoning_content"), "think",
           "the reasoning item before it is its reasoning_content");
    calls = json_object_get(m, "tool_calls");
    is_int(json_array_size(calls), 2, "both function calls in one turn");
    is_str(json_string_value(json_object_get(json_array_get(calls, 0), "id")),
           "call_1", "call id from call_id");
    is_str(json_string_value(json_object_get(json_object_get(json_object_get(
               json_array_get(calls, 0), "function"), "arguments"), "city")),
           "Paris", "arguments parsed to an object");
    ok(json_is_object(json_object_get(json_object_get(json_array_get(calls, 1),
                                                      "function"),
                                      "arguments")),
       "empty arguments -> {}");
    is_str(msg_str(&req, 3, "role"), "tool", "function_call_output -> tool");
    is_str(msg_str(&req, 3, "tool_call_id"), "call_1", "its tool_call_id");
    is_str(msg_str(&req, 3, "name"), "get_weather", "named after its call");
    is_str(msg_str(&req, 3, "content"), "18C", "its output");
    is_str(msg_str(&req, 4, "content"), "noon", "output as text parts");
    is_str(msg_str(&req, 5, "role"), "assistant", "assistant message item");
    is_str(msg_str(&req, 5, "content"), "It is 18C.", "output_text part");
    ok(msg_str(&req, 5, "reasoning_content") == NULL,
       "reasoning went to the turn right after it only");
    is_str(msg_str(&req, 6, "content"), "thanks", "last user turn");
    llm_request_free(&req);
}

static void
test_tools_and_format(void)
{
    llm_request    req;
    llm_api_error  err;
    const json_t  *t, *rf;

    ok(parse("{\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":"
             "\"get_weather\",\"description\":\"Weather\",\"parameters\":"
             "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
             "\"string\"}}},\"strict\":true}],\"tool_choice\":{\"type\":"
             "\"function\",\"name\":\"get_weather\"},\"parallel_tool_calls\":"
             "false,\"reasoning\":{\"effort\":\"low\",\"summary\":\"auto\"}}",
             &req, &err) == 0, "function tools parse");
    t = json_array_get(req.tools, 0);
    is_str(json_string_value(json_object_get(t, "type")), "function",
           "canonical tool type");
    is_str(json_string_value(json_object_get(json_object_get(t, "function"),
                                             "name")),
           "get_weather", "name under function");
    ok(json_is_object(json_object_get(json_object_get(t, "function"),
                                      "parameters")), "parameters kept");
    is_int(req.tool_choice, LLM_TOOL_CHOICE_NAMED, "named tool_choice");
    is_str(req.tool_choice_name, "get_weather", "its name");
    is_int(req.parallel_tool_calls, 0, "parallel_tool_calls false");
    is_int(req.reasoning, 1, "reasoning.effort low: reasoning on");
    ok(json_is_false(json_object_get(req.response_fields,
                                     "parallel_tool_calls")),
       "the response repeats parallel_tool_calls");
    llm_request_free(&req);

    ok(parse("{\"input\":\"hi\",\"reasoning\":{\"effort\":\"minimal\"},"
             "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"p\","
             "\"strict\":true,\"schema\":{\"type\":\"object\",\"properties\":"
             "{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}}}}",
             &req, &err) == 0, "text.format json_schema parses");
    is_int(req.reasoning, 0, "reasoning.effort minimal: reasoning off");
    rf = req.response_format;
    is_str(json_string_value(json_object_get(rf, "type")), "json_schema",
           "chat's response_format type");
    ok(json_object_get(json_object_get(json_object_get(json_object_get(rf,
           "json_schema"), "schema"), "properties"), "n") != NULL,
       "the schema under json_schema");
    is_str(json_string_value(json_object_get(json_object_get(rf,
               "json_schema"), "name")), "p", "its name");
    llm_request_free(&req);

    ok(parse("{\"input\":\"hi\",\"text\":{\"format\":{\"type\":"
             "\"json_object\"}}}", &req, &err) == 0, "json_object parses");
    is_str(json_string_value(json_object_get(req.response_format, "type")),
           "json_object", "response_format json_object");
    llm_request_free(&req);

    ok(parse("{\"input\":\"hi\",\"text\":{\"format\":{\"type\":\"json_schema\","
             "\"name\":\"p\",\"schema\":{\"type\":\"object\",\"properties\":"
             "{\"s\":{\"type\":\"string\",\"pattern\":\"(\"}}}}}}",
             &req, &err) == -1, "a schema that cannot be enforced is refused");
    is_str(err.param, "text.format.schema", "  naming text.format.schema");
    llm_request_free(&req);
}

/* ---- formatter ---- */

static llm_formatter *
make(const json_t *fields)
{
    llm_formatter_config  c;

    memset(&c, 0, sizeof(c));
    c.id = "resp_abc";
    c.created = 1700000000;
    c.model = "tiny";
    c.n_choices = 1;
    c.stream = 1;
    c.fields = fields;
    return llm_formatter_create(llm_formatter_find(LLM_API_RESPONSES), &c);
}

static const llm_event *
ev(llm_event_type t, int index, const char *id, const char *name,
    const char *text)
{
    static llm_event  e;

    memset(&e, 0, sizeof(e));
    e.type = t;
    e.index = index;
    e.id = id;
    e.name = name;
    e.text = text;
    e.len = text ? strlen(text) : 0;
    return &e;
}

/* The SSE frames of b: names in order, and each data object. */
typedef struct {
    char    names[64][64];
    json_t *data[64];
    size_t  n;
} frames;

static int
split(const llm_buf *b, frames *fr)
{
    const char *p = b->data, *end = b->data + b->len, *nl, *dl;
    size_t      n;

    memset(fr, 0, sizeof(*fr));
    while (p < end && fr->n < 64) {
        if (strncmp(p, "event: ", 7) != 0) {
            return -1;
        }
        nl = strchr(p, '\n');
        n = (size_t) (nl - p - 7);
        memcpy(fr->names[fr->n], p + 7, n < 63 ? n : 63);
        if (strncmp(nl + 1, "data: ", 6) != 0) {
            return -1;
        }
        dl = strstr(nl + 1, "\n\n");
        fr->data[fr->n] = json_loadb(nl + 7, (size_t) (dl - nl - 7), 0, NULL);
        if (fr->data[fr->n] == NULL) {
            return -1;
        }
        fr->n++;
        p = dl + 2;
    }
    return 0;
}

static void
frames_free(frames *fr)
{
    size_t i;

    for (i = 0; i < fr->n; i++) {
        json_decref(fr->data[i]);
    }
}

static const char *
jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static void
test_stream(void)
{
    static const char *const order[] = {
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added",
        "response.reasoning_text.delta", "response.reasoning_text.done",
        "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed"
    };
    llm_buf        b;
    llm_formatter *f;
    llm_result     r;
    llm_usage      u = { 12, 9, 4, 3, 0 };
    frames         fr;
    size_t         i, n = sizeof(order) / sizeof(order[0]);
    int            in_order = 1, numbered = 1;
    json_t        *fields, *resp, *out, *usage;

    fields = json_pack("{s:s,s:[]}", "instructions", "Be brief.", "tools");
    f = make(fields);
    llm_buf_init(&b);
    memset(&r, 0, sizeof(r));
    ok(llm_formatter_start(f, &b) == 0, "start");
    llm_formatter_event(f, &b, 0, ev(LLM_EV_REASONING, 0, 0, 0, "hm"), NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_CONTENT, 0, 0, 0, "Hi"), NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_CONTENT, 0, 0, 0, " there"), NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_BEGIN, 0, "call_7", "get", 0),
                        NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_ARGS, 0, 0, 0, "{\"a\":"),
                        NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_ARGS, 0, 0, 0, "1}"), NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_END, 0, 0, 0, 0), NULL);
    r.finish = LLM_FINISH_TOOL_CALLS;
    ok(llm_formatter_finish_choice(f, &b, 0, &r) == 0, "finish_choice");
    ok(llm_formatter_finish(f, &b, &r, &u) == 0, "finish");

    ok(split(&b, &fr) == 0, "every frame is 'event: NAME' + 'data: JSON'");
    is_int(fr.n, n, "%zu events", n);
    for (i = 0; i < n && i < fr.n; i++) {
        if (strcmp(fr.names[i], order[i]) != 0) {
            printf("#   event %zu: %s, want %s\n", i, fr.names[i], order[i]);
            in_order = 0;
        }
        if (json_integer_value(json_object_get(fr.data[i], "sequence_number"))
            != (json_int_t) i || strcmp(jstr(fr.data[i], "type"), fr.names[i]))
        {
            numbered = 0;
        }
    }
    ok(in_order, "the semantic events in order");
    ok(numbered, "sequence_number counts from 0; type equals the event name");
    if (fr.n != n) {
        frames_free(&fr);
        llm_buf_free(&b);
        llm_formatter_free(f);
        json_decref(fields);
        return;
    }

    resp = json_object_get(fr.data[0], "response");
    is_str(jstr(resp, "id"), "resp_abc", "created: the response id");
    is_str(jstr(resp, "status"), "in_progress", "created: in progress");
    is_str(jstr(resp, "instructions"), "Be brief.", "instructions repeated");
    is_int(json_array_size(json_object_get(resp, "output")), 0,
           "created: no output yet");
    is_str(jstr(json_object_get(fr.data[3], "part"), "type"), "reasoning_text",
           "the reasoning item's part");
    is_str(jstr(fr.data[4], "delta"), "hm", "reasoning delta");
    is_str(jstr(fr.data[5], "text"), "hm", "reasoning done text");
    is_int(json_integer_value(json_object_get(fr.data[8], "output_index")), 1,
           "the message is output 1");
    is_str(jstr(fr.data[10], "delta"), "Hi", "first text delta");
    is_str(jstr(fr.data[12], "text"), "Hi there", "output_text.done text");
    is_str(jstr(json_object_get(fr.data[14], "item"), "status"), "completed",
           "the message item is completed");
    is_str(jstr(json_object_get(fr.data[15], "item"), "call_id"), "call_7",
           "function_call item's call_id");
    is_str(jstr(json_object_get(fr.data[15], "item"), "name"), "get",
           "and name");
    is_str(jstr(fr.data[18], "arguments"), "{\"a\":1}",
           "arguments.done carries the whole arguments");
    ok(strcmp(jstr(fr.data[16], "item_id"),
              jstr(json_object_get(fr.data[15], "item"), "id")) == 0,
       "deltas name their item");

    resp = json_object_get(fr.data[n - 1], "response");
    out = json_object_get(resp, "output");
    is_str(jstr(resp, "status"), "completed", "completed status");
    is_int(json_array_size(out), 3, "three output items");
    is_str(jstr(json_array_get(out, 0), "type"), "reasoning", "reasoning");
    is_str(jstr(json_array_get(json_object_get(json_array_get(out, 0),
                                               "content"), 0), "text"),
           "hm", "  with its text");
    is_str(jstr(json_array_get(out, 1), "type"), "message", "message");
    is_str(jstr(json_array_get(out, 2), "type"), "function_call",
           "function_call");
    is_str(jstr(json_array_get(out, 1), "id"),
           jstr(json_object_get(fr.data[8], "item"), "id"),
           "item ids in the final output equal the streamed ones");
    usage = json_object_get(resp, "usage");
    is_int(json_integer_value(json_object_get(usage, "input_tokens")), 12,
           "usage input_tokens");
    is_int(json_integer_value(json_object_get(json_object_get(usage,
               "input_tokens_details"), "cached_tokens")), 4, "cached_tokens");
    is_int(json_integer_value(json_object_get(usage, "output_tokens")), 9,
           "output_tokens");
    is_int(json_integer_value(json_object_get(json_object_get(usage,
               "output_tokens_details"), "reasoning_tokens")), 3,
           "reasoning_tokens");
    is_int(json_integer_value(json_object_get(usage, "total_tokens")), 21,
           "total_tokens");
    frames_free(&fr);
    llm_formatter_free(f);

    /* a length stop: response.incomplete */
    f = make(NULL);
    llm_buf_reset(&b);
    llm_formatter_start(f, &b);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_CONTENT, 0, 0, 0, "cut"), NULL);
    r.finish = LLM_FINISH_LENGTH;
    llm_formatter_finish(f, &b, &r, &u);
    ok(split(&b, &fr) == 0 && fr.n > 0, "length: frames parse");
    if (fr.n > 0) {
        resp = json_object_get(fr.data[fr.n - 1], "response");
        is_str(fr.names[fr.n - 1], "response.incomplete",
               "a length stop ends with response.incomplete");
        is_str(jstr(resp, "status"), "incomplete", "status incomplete");
        is_str(jstr(json_object_get(resp, "incomplete_details"), "reason"),
               "max_output_tokens", "incomplete_details.reason");
        is_str(jstr(json_array_get(json_object_get(resp, "output"), 0),
                    "status"), "incomplete", "the cut message is incomplete");
    }
    frames_free(&fr);
    llm_formatter_free(f);

    /* a failure after the stream began */
    f = make(NULL);
    llm_buf_reset(&b);
    llm_formatter_start(f, &b);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_CONTENT, 0, 0, 0, "x"), NULL);
    {
        llm_api_error err;

        llm_formatter_generation_error(f, &err, "boom");
        is_int(err.status, 500, "generation error: 500");
        is_str(err.type, "server_error", "  typed server_error");
        llm_formatter_error(f, &b, &err);
    }
    ok(split(&b, &fr) == 0 && fr.n > 0, "failed: frames parse");
    if (fr.n > 0) {
        resp = json_object_get(fr.data[fr.n - 1], "response");
        is_str(fr.names[fr.n - 1], "response.failed", "ends with response.failed");
        is_str(jstr(resp, "status"), "failed", "status failed");
        ok(strstr(jstr(json_object_get(resp, "error"), "message"), "boom")
           != NULL, "the error's message");
    }
    frames_free(&fr);
    llm_formatter_free(f);

    /* keepalive: an SSE comment */
    f = make(NULL);
    llm_buf_reset(&b);
    llm_formatter_keepalive(f, &b);
    ok(b.len > 0 && b.data[0] == ':', "keepalive is an SSE comment");
    llm_formatter_free(f);
    llm_buf_free(&b);
    json_decref(fields);
}

static void
test_response(void)
{
    llm_buf        b;
    llm_formatter *f;
    llm_result     r;
    llm_tool_call  tc = { "call_1", "get_weather", "{\"city\":\"Paris\"}" };
    json_t        *o, *out, *fields;

    fields = json_pack("{s:i,s:s}", "max_output_tokens", 50, "tool_choice",
                       "auto");
    f = make(fields);
    llm_buf_init(&b);
    memset(&r, 0, sizeof(r));
    r.reasoning = "because";
    r.content = "Checking.";
    r.tool_calls = &tc;
    r.n_tool_calls = 1;
    r.finish = LLM_FINISH_TOOL_CALLS;
    r.usage.prompt_tokens = 30;
    r.usage.completion_tokens = 10;
    r.usage.cached_tokens = 16;
    r.usage.reasoning_tokens = 2;
    ok(llm_formatter_response(f, &b, &r, NULL) == 0, "response");
    o = json_loadb(b.data, b.len, 0, NULL);
    ok(o != NULL, "the body is JSON");
    is_str(jstr(o, "id"), "resp_abc", "id");
    is_str(jstr(o, "object"), "response", "object response");
    is_int(json_integer_value(json_object_get(o, "created_at")), 1700000000,
           "created_at");
    is_str(jstr(o, "status"), "completed", "status completed");
    is_str(jstr(o, "model"), "tiny", "model");
    ok(json_is_null(json_object_get(o, "incomplete_details")),
       "incomplete_details null");
    is_int(json_integer_value(json_object_get(o, "max_output_tokens")), 50,
           "max_output_tokens repeated");
    ok(json_is_false(json_object_get(o, "store")), "store false");
    out = json_object_get(o, "output");
    is_int(json_array_size(out), 3, "reasoning, message, function_call");
    ok(strncmp(jstr(json_array_get(out, 0), "id"), "rs_", 3) == 0,
       "reasoning item id rs_");
    is_str(jstr(json_array_get(json_object_get(json_array_get(out, 0),
                                               "content"), 0), "text"),
           "because", "reasoning text");
    ok(strncmp(jstr(json_array_get(out, 1), "id"), "msg_", 4) == 0,
       "message item id msg_");
    is_str(jstr(json_array_get(json_object_get(json_array_get(out, 1),
                                               "content"), 0), "type"),
           "output_text", "output_text part");
    is_str(jstr(json_array_get(json_object_get(json_array_get(out, 1),
                                               "content"), 0), "text"),
           "Checking.", "its text");
    ok(strncmp(jstr(json_array_get(out, 2), "id"), "fc_", 3) == 0,
       "function_call item id fc_");
    is_str(jstr(json_array_get(out, 2), "call_id"), "call_1", "call_id");
    is_str(jstr(json_array_get(out, 2), "arguments"), "{\"city\":\"Paris\"}",
           "arguments as a JSON string");
    is_int(json_integer_value(json_object_get(json_object_get(json_object_get(o,
               "usage"), "output_tokens_details"), "reasoning_tokens")), 2,
           "reasoning_tokens");
    is_int(json_integer_value(json_object_get(json_object_get(o, "usage"),
               "total_tokens")), 40, "total_tokens");
    json_decref(o);

    llm_buf_reset(&b);
    r.reasoning = NULL;
    r.n_tool_calls = 0;
    r.content = "partial";
    r.finish = LLM_FINISH_LENGTH;
    llm_formatter_response(f, &b, &r, NULL);
    o = json_loadb(b.data, b.len, 0, NULL);
    is_str(jstr(o, "status"), "incomplete", "length: status incomplete");
    is_str(jstr(json_object_get(o, "incomplete_details"), "reason"),
           "max_output_tokens", "incomplete_details.reason");
    is_int(json_array_size(json_object_get(o, "output")), 1, "one message");
    json_decref(o);

    llm_buf_free(&b);
    llm_formatter_free(f);
    json_decref(fields);
}

/*
 * Codex CLI's default tools: a namespace of functions (offered flattened,
 * answered split) and web_search (left out); a call of a namespaced
 * function sent back in the input is read under the flattened name.
 */
static const char namespaced_tools[] =
    "[{\"type\":\"function\",\"name\":\"shell\",\"parameters\":"
      "{\"type\":\"object\"}},"
    "{\"type\":\"namespace\",\"name\":\"multi_agent_v1\",\"description\":"
      "\"Sub-agents.\",\"tools\":["
      "{\"type\":\"function\",\"name\":\"spawn_agent\",\"description\":"
        "\"Start one.\",\"strict\":false,\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"task\":{\"type\":\"string\"}}}},"
      "{\"type\":\"function\",\"name\":\"wait\",\"parameters\":"
        "{\"type\":\"object\"}}]},"
    "{\"type\":\"web_search\",\"external_web_access\":false}]";

static int
same(const char *a, const char *b)
{
    return a != NULL && strcmp(a, b) == 0;
}

static void
test_namespace_tools(void)
{
    llm_request    req;
    llm_api_error  err;
    char           body[2048];
    json_t        *fields, *o, *out, *calls;
    llm_buf        b;
    llm_formatter *f;
    llm_result     r;
    llm_tool_call  tc[2] = {
        { "call_1", "multi_agent_v1__spawn_agent", "{\"task\":\"x\"}" },
        { "call_2", "shell", "{}" }
    };
    frames         fr;
    size_t         i;
    int            added = 0, done = 0, args_done = 0;

    snprintf(body, sizeof(body), "{\"input\":\"hi\",\"tools\":%s}",
             namespaced_tools);
    ok(parse(body, &req, &err) == 0, "function + namespace + web_search parse");
    if (req.tools == NULL) {
        printf("#   %s\n", err.message);
    }
    is_int(json_array_size(req.tools), 3,
           "the model is offered 3 functions (web_search left out)");
    is_str(json_string_value(json_object_get(json_object_get(
               json_array_get(req.tools, 1), "function"), "name")),
           "multi_agent_v1__spawn_agent", "a namespace's function: ns__name");
    is_str(json_string_value(json_object_get(json_object_get(
               json_array_get(req.tools, 1), "function"), "description")),
           "Start one.", "  with its own description");
    ok(json_object_get(json_object_get(json_object_get(json_array_get(
           req.tools, 1), "function"), "parameters"), "properties") != NULL,
       "  and its parameters");
    is_str(json_string_value(json_object_get(json_object_get(
               json_array_get(req.tools, 2), "function"), "name")),
           "multi_agent_v1__wait", "the namespace's second function");
    is_int(json_array_size(json_object_get(req.response_fields, "tools")), 3,
           "the response repeats the tools as sent");
    fields = json_incref(req.response_fields);
    llm_request_free(&req);

    ok(parse("{\"input\":\"hi\",\"tools\":[{\"type\":\"web_search\"},"
             "{\"type\":\"web_search_preview\"},{\"type\":\"file_search\"},"
             "{\"type\":\"code_interpreter\"},{\"type\":\"image_generation\"}]}",
             &req, &err) == 0, "hosted tools alone parse");
    ok(req.tools == NULL, "  and no tools are offered");
    llm_request_free(&req);

    ok(parse("{\"input\":[{\"role\":\"user\",\"content\":\"go\"},"
             "{\"type\":\"function_call\",\"call_id\":\"c1\",\"namespace\":"
             "\"multi_agent_v1\",\"name\":\"wait\",\"arguments\":\"{}\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":"
             "\"done\"}]}", &req, &err) == 0,
       "a namespaced function_call in the input parses");
    calls = json_object_get(json_array_get(req.messages, 1), "tool_calls");
    is_str(json_string_value(json_object_get(json_object_get(
               json_array_get(calls, 0), "function"), "name")),
           "multi_agent_v1__wait", "  under the name the model was offered");
    is_str(msg_str(&req, 2, "name"), "multi_agent_v1__wait",
           "  and its output names it so");
    llm_request_free(&req);

    /* the answer: namespace and name split again */
    f = make(fields);
    llm_buf_init(&b);
    memset(&r, 0, sizeof(r));
    r.tool_calls = tc;
    r.n_tool_calls = 2;
    r.finish = LLM_FINISH_TOOL_CALLS;
    ok(llm_formatter_response(f, &b, &r, NULL) == 0, "response");
    o = json_loadb(b.data, b.len, 0, NULL);
    out = json_object_get(o, "output");
    is_str(jstr(json_array_get(out, 0), "namespace"), "multi_agent_v1",
           "a namespaced call carries its namespace");
    is_str(jstr(json_array_get(out, 0), "name"), "spawn_agent",
           "  and the function's own name");
    is_str(jstr(json_array_get(out, 1), "name"), "shell",
           "a plain function keeps its name");
    ok(json_object_get(json_array_get(out, 1), "namespace") == NULL,
       "  and has no namespace");
    json_decref(o);
    llm_formatter_free(f);

    f = make(fields);
    llm_buf_reset(&b);
    llm_formatter_start(f, &b);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_BEGIN, 0, "call_1",
                                     "multi_agent_v1__spawn_agent", 0), NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_ARGS, 0, 0, 0, "{}"), NULL);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_TOOL_END, 0, 0, 0, 0), NULL);
    r.n_tool_calls = 1;
    llm_formatter_finish_choice(f, &b, 0, &r);
    llm_formatter_finish(f, &b, &r, NULL);
    ok(split(&b, &fr) == 0, "streamed");
    for (i = 0; i < fr.n; i++) {
        const json_t *item = json_object_get(fr.data[i], "item");

        if (strcmp(fr.names[i], "response.output_item.added") == 0) {
            added = same(jstr(item, "namespace"), "multi_agent_v1")
                    && same(jstr(item, "name"), "spawn_agent");
        } else if (strcmp(fr.names[i], "response.output_item.done") == 0) {
            done = same(jstr(item, "namespace"), "multi_agent_v1")
                   && same(jstr(item, "name"), "spawn_agent");
        } else if (strcmp(fr.names[i],
                          "response.function_call_arguments.done") == 0)
        {
            args_done = same(jstr(fr.data[i], "namespace"), "multi_agent_v1")
                        && same(jstr(fr.data[i], "name"), "spawn_agent");
        }
    }
    ok(added, "  output_item.added: namespace and name");
    ok(args_done, "  function_call_arguments.done: namespace and name");
    ok(done, "  output_item.done: namespace and name");
    frames_free(&fr);
    llm_buf_free(&b);
    llm_formatter_free(f);
    json_decref(fields);
}

/* ---- kept responses: previous_response_id, store, the record ---- */

static int
lparse(const char *body, const llm_api_limits *l, llm_request *req,
    llm_api_error *err)
{
    return llm_responses_parse(body, strlen(body), l, req, err);
}

/* A lookup over one kept record (or none), counting its calls. */
typedef struct {
    const char *id;
    const char *rec;
    int         calls;
} kept;

static int
kept_get(void *ctx, const char *id, size_t id_len, llm_buf *out)
{
    kept *k = ctx;

    k->calls++;
    if (k->rec == NULL || strlen(k->id) != id_len
        || memcmp(k->id, id, id_len) != 0)
    {
        return 0;
    }
    return llm_buf_puts(out, k->rec) == 0 ? 1 : -1;
}

static void
test_kept(void)
{
    llm_api_limits       kl;
    llm_response_lookup  lookup;
    kept                 k;
    llm_request          req;
    llm_api_error        err;
    llm_formatter       *f;
    llm_formatter_config c;
    llm_result           r;
    llm_buf              b, rec, back;
    json_t              *items, *o, *input;
    const char          *prior =
        "{\"input\":[{\"type\":\"message\",\"role\":\"user\","
        "\"content\":\"My name is Ada.\"}],"
        "\"response\":{\"id\":\"resp_1\",\"object\":\"response\","
        "\"output\":[{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[],"
        "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"greet\"}]},"
        "{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\","
        "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Hello Ada.\",\"annotations\":[],\"logprobs\":[]}]},"
        "{\"id\":\"fc_1\",\"type\":\"function_call\",\"status\":"
        "\"completed\",\"call_id\":\"call_1\",\"name\":\"f\","
        "\"arguments\":\"{}\"}]}}";

    kl = lim;
    lookup.get = kept_get;
    lookup.ctx = &k;
    kl.responses = &lookup;
    k.id = "resp_1";
    k.rec = prior;
    k.calls = 0;

    /* the record's items */
    items = llm_responses_record_items(prior, strlen(prior));
    is_int(json_array_size(items), 4, "record items: 1 input + 3 output");
    is_str(jstr(json_array_get(items, 3), "type"), "function_call",
           "the output's items come after the input");
    json_decref(items);
    ok(llm_responses_record_items("{\"input\":3}", 11) == NULL,
       "not a record: NULL");
    llm_buf_init(&back);
    is_int(llm_responses_record_response(&back, prior, strlen(prior)), 0,
           "the record's response");
    ok(strncmp(back.data, "{\"id\":\"resp_1\"", 14) == 0,
       "is the response object");
    llm_buf_free(&back);

    /* previous_response_id continues the kept conversation */
    memset(&err, 0, sizeof(err));
    is_int(lparse("{\"input\":[{\"type\":\"function_call_output\","
        "\"call_id\":\"call_1\",\"output\":\"42\"},{\"role\":\"user\","
        "\"content\":\"And mine?\"}],\"previous_response_id\":\"resp_1\","
        "\"instructions\":\"Be brief.\"}", &kl, &req, &err), 0,
        "previous_response_id: parsed (%s)", err.message);
    is_int(k.calls, 1, "the store was asked once");
    is_int(json_array_size(req.messages), 5,
           "system, kept user, kept assistant, tool answer, new user");
    is_str(msg_str(&req, 0, "content"), "Be brief.",
           "this request's instructions (not kept ones) first");
    is_str(msg_str(&req, 1, "content"), "My name is Ada.", "the kept input");
    is_str(msg_str(&req, 2, "role"), "assistant", "the kept output");
    is_str(msg_str(&req, 2, "content"), "Hello Ada.", "its text");
    is_str(msg_str(&req, 2, "reasoning_content"), "greet", "its reasoning");
    is_int(json_array_size(json_object_get(json_array_get(req.messages, 2),
                                           "tool_calls")), 1, "its call");
    is_str(msg_str(&req, 3, "role"), "tool",
           "the new input answers the kept call");
    is_str(msg_str(&req, 4, "content"), "And mine?", "then the new message");
    ok(json_is_array(req.response_input), "store (default): items to keep");
    is_int(json_array_size(req.response_input), 6,
           "kept: 1 + 3 prior items, then the 2 of input");
    is_str(json_string_value(json_object_get(req.response_fields,
               "previous_response_id")), "resp_1",
           "the response repeats previous_response_id");
    ok(json_is_true(json_object_get(req.response_fields, "store")),
       "and says store: true");
    llm_request_free(&req);

    /* an unknown id: 404 in OpenAI's shape */
    memset(&err, 0, sizeof(err));
    is_int(lparse("{\"input\":\"x\",\"previous_response_id\":"
        "\"resp_gone\"}", &kl, &req, &err), -1, "an unknown id: -1");
    is_int(err.status, 404, "404");
    is_str(err.type, "invalid_request_error", "invalid_request_error");
    is_str(err.code, "previous_response_not_found", "its code");
    is_str(err.param, "previous_response_id", "its param");
    is_str(err.message, "Previous response with id 'resp_gone' not found.",
           "its message names the id");
    llm_request_free(&req);
    memset(&err, 0, sizeof(err));
    is_int(lparse("{\"input\":\"x\",\"previous_response_id\":3}", &kl, &req, &err), -1, "a number: -1");
    is_str(err.param, "previous_response_id", "a 400 on the field");
    is_int(err.status, 400, "400");
    llm_request_free(&req);

    /* store: false keeps nothing; a string input is kept as a message */
    memset(&err, 0, sizeof(err));
    is_int(lparse("{\"input\":\"x\",\"store\":false}", &kl, &req, &err), 0, "store false");
    ok(req.response_input == NULL, "nothing to keep");
    ok(json_is_false(json_object_get(req.response_fields, "store")),
       "the response says store: false");
    llm_request_free(&req);
    is_int(lparse("{\"input\":\"x\"}", &kl, &req, &err), 0,
           "a string input");
    is_str(jstr(json_array_get(req.response_input, 0), "role"), "user",
           "kept as a user message");
    is_str(jstr(json_array_get(req.response_input, 0), "content"), "x",
           "with its text");
    input = json_incref(req.response_input);
    llm_request_free(&req);
    is_int(lparse("{\"input\":\"x\"}", &lim, &req, &err), 0,
           "without a store");
    ok(req.response_input == NULL, "nothing is kept");
    ok(json_is_false(json_object_get(req.response_fields, "store")),
       "and the response says store: false");
    llm_request_free(&req);

    /* the formatter's record: input + the response object */
    memset(&c, 0, sizeof(c));
    c.id = "resp_2";
    c.created = 1700000000;
    c.model = "tiny";
    c.n_choices = 1;
    c.response_input = input;
    memset(&r, 0, sizeof(r));
    r.content = "Hi.";
    r.finish = LLM_FINISH_STOP;
    llm_buf_init(&b);
    llm_buf_init(&rec);
    f = llm_formatter_create(llm_formatter_find(LLM_API_RESPONSES), &c);
    is_int(llm_formatter_record(f, &rec), 0, "no record before the response");
    ok(llm_formatter_response(f, &b, &r, NULL) == 0, "a response");
    is_int(llm_formatter_record(f, &rec), 1, "then a record");
    o = json_loadb(rec.data, rec.len, 0, NULL);
    ok(json_equal(json_object_get(o, "input"), input), "with the input");
    is_str(jstr(json_object_get(o, "response"), "id"), "resp_2",
           "and the response");
    json_decref(o);
    items = llm_responses_record_items(rec.data, rec.len);
    is_int(json_array_size(items), 2, "which continues as input + message");
    json_decref(items);
    llm_formatter_free(f);

    c.stream = 1;
    llm_buf_reset(&rec);
    f = llm_formatter_create(llm_formatter_find(LLM_API_RESPONSES), &c);
    llm_formatter_start(f, &b);
    llm_formatter_event(f, &b, 0, ev(LLM_EV_CONTENT, 0, NULL, NULL, "Hi."),
                        NULL);
    is_int(llm_formatter_record(f, &rec), 0, "streamed: none before the end");
    llm_formatter_finish(f, &b, &r, &r.usage);
    is_int(llm_formatter_record(f, &rec), 1, "streamed: one after");
    ok(strstr(rec.data, "\"text\":\"Hi.\"") != NULL, "with the streamed text");
    llm_formatter_free(f);

    c.response_input = NULL;
    llm_buf_reset(&rec);
    f = llm_formatter_create(llm_formatter_find(LLM_API_RESPONSES), &c);
    llm_formatter_start(f, &b);
    llm_formatter_finish(f, &b, &r, &r.usage);
    is_int(llm_formatter_record(f, &rec), 0, "store false: no record");
    llm_formatter_free(f);
    c.response_input = input;
    f = llm_formatter_create(llm_formatter_find(LLM_API_CHAT), &c);
    llm_formatter_start(f, &b);
    llm_formatter_finish(f, &b, &r, &r.usage);
    is_int(llm_formatter_record(f, &rec), 0, "chat keeps nothing");
    llm_formatter_free(f);

    llm_buf_reset(&b);
    is_int(llm_responses_deleted(&b, "resp_2", 6), 0, "DELETE's answer");
    is_str(b.data, "{\"id\":\"resp_2\",\"object\":\"response\","
           "\"deleted\":true}", "is OpenAI's");
    llm_buf_free(&b);
    llm_buf_free(&rec);
    json_decref(input);
}

int
main(void)
{
    llm_api_limits_default(&lim);
    ok(llm_formatter_find(LLM_API_RESPONSES) != NULL, "responses has a table");
    is_str(llm_formatter_find(LLM_API_RESPONSES)->id_prefix, "resp_",
           "response ids start resp_");
    test_bad();
    test_string_input();
    test_items();
    test_tools_and_format();
    test_stream();
    test_response();
    test_namespace_tools();
    test_kept();
    return done_testing();
}
