/*
 * Compiled twins of groups.GroupIndex and matcher.RuleSet (see core.py).
 *
 * Same behaviour as the Python classes, which stay the reference: the tests run the
 * suites on both and compare them on the corpora and on generated input. Everything
 * here reads untrusted octets, so every access is bounded by an explicit length, and
 * every search is linear: patterns are matched with a greedy left-most search of
 * their literal pieces (Knuth-Morris-Pratt, never backtracking).
 *
 * Line reading follows parser.py: CR, LF and CRLF end a line; a line is cut to
 * MAX_LINE_OCTETS; "#" starts a comment; "key: value" or exactly two tokens
 * separated by SP or HTAB; keys compared case-insensitively by prefix;
 * "Content-Usage" exactly as draft-ietf-aipref-attach reads it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_LINE_OCTETS (2083 * 8 - 1)
#define BUCKET_KEY_LENGTH 4

enum {
    KIND_NONE = 0,
    KIND_USER_AGENT,
    KIND_ALLOW,
    KIND_DISALLOW,
    KIND_SITEMAP,
    KIND_CRAWL_DELAY,
    KIND_CONTENT_USAGE,
    KIND_UNKNOWN
};

/* ------------------------------------------------------------------------------ */
/* Octet classes                                                                  */
/* ------------------------------------------------------------------------------ */

static int
is_space(unsigned char c)
{
    /* What bytes.strip() and bytes.split() treat as whitespace. */
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int
is_blank(unsigned char c)
{
    /* What separates the tokens of a colon-less line (Google: " \t"). */
    return c == ' ' || c == '\t';
}

static unsigned char
ascii_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static int
is_token_octet(unsigned char c)
{
    /* Product-token characters (RFC 9309 2.2.1, as Google reads them). */
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '-';
}

static int
is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

/* By octet: URL_OCTET where a normalised path carries it as it is (urlnorm.KEPT_AS_IS:
 * the unreserved octets and :/?#[]@!&'()+,;=), PATTERN_OCTET where a normalised pattern
 * does (the same and "*"). A table because loops over every octet of every URL decided
 * and of every rule compiled test it. */
#define URL_OCTET 1
#define PATTERN_OCTET 2
static const unsigned char KEPT_OCTETS[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 3, 0, 3, 0, 0, 3, 3, 3, 3, 2, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 3, 0, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 3, 0, 3,
    0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 0, 0, 3, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static int
hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = ascii_lower(c);
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

static const char HEX_DIGITS[] = "0123456789ABCDEF";

/* ------------------------------------------------------------------------------ */
/* Line reading (parser.py's rules)                                               */
/* ------------------------------------------------------------------------------ */

typedef struct {
    const char *prefix;
    Py_ssize_t length;
    int kind;
} KeyPrefix;

/* In the order Google tests them; the first that a key starts with wins. */
static const KeyPrefix KEY_PREFIXES[] = {
    {"user-agent", 10, KIND_USER_AGENT}, {"useragent", 9, KIND_USER_AGENT},
    {"user agent", 10, KIND_USER_AGENT}, {"allow", 5, KIND_ALLOW},
    {"disallow", 8, KIND_DISALLOW},      {"dissallow", 9, KIND_DISALLOW},
    {"dissalow", 8, KIND_DISALLOW},      {"disalow", 7, KIND_DISALLOW},
    {"diasllow", 8, KIND_DISALLOW},      {"disallaw", 8, KIND_DISALLOW},
    {"sitemap", 7, KIND_SITEMAP},        {"site-map", 8, KIND_SITEMAP},
    {"crawl-delay", 11, KIND_CRAWL_DELAY}, {"crawldelay", 10, KIND_CRAWL_DELAY},
    {"crawl delay", 11, KIND_CRAWL_DELAY},
};

static int
key_kind(const unsigned char *key, Py_ssize_t length)
{
    size_t i;
    for (i = 0; i < sizeof(KEY_PREFIXES) / sizeof(KEY_PREFIXES[0]); i++) {
        const KeyPrefix *known = &KEY_PREFIXES[i];
        Py_ssize_t j;
        if (length < known->length || ascii_lower(key[0]) != (unsigned char)known->prefix[0]) {
            continue;
        }
        for (j = 1; j < known->length; j++) {
            if (ascii_lower(key[j]) != (unsigned char)known->prefix[j]) {
                break;
            }
        }
        if (j == known->length) {
            return known->kind;
        }
    }
    return KIND_UNKNOWN;
}

static const char CONTENT_USAGE[] = "content-usage";
#define CONTENT_USAGE_LENGTH ((Py_ssize_t)(sizeof(CONTENT_USAGE) - 1))

/* Whether key, everything before a line's first colon, is a Content-Usage label:
 * draft-ietf-aipref-attach ignores SP and HTAB, and only those, around the label and
 * the colon (parser._CONTENT_USAGE_LINE). */
static int
is_content_usage_key(const unsigned char *key, Py_ssize_t length)
{
    Py_ssize_t p = 0, i;
    while (p < length && is_blank(key[p])) {
        p++;
    }
    if (length - p < CONTENT_USAGE_LENGTH) {
        return 0;
    }
    for (i = 0; i < CONTENT_USAGE_LENGTH; i++) {
        if (ascii_lower(key[p + i]) != (unsigned char)CONTENT_USAGE[i]) {
            return 0;
        }
    }
    for (p += CONTENT_USAGE_LENGTH; p < length; p++) {
        if (!is_blank(key[p])) {
            return 0;
        }
    }
    return 1;
}

/* The record of one line (already cut to MAX_LINE_OCTETS): its kind, and the
 * stripped value as [*value_start, *value_end) of the line. */
static int
classify(const unsigned char *line, Py_ssize_t length, Py_ssize_t *value_start,
         Py_ssize_t *value_end)
{
    const unsigned char *found;
    Py_ssize_t key_start = 0, key_end, start, end;

    found = memchr(line, '#', (size_t)length);
    if (found != NULL) {
        length = found - line;
    }
    found = memchr(line, ':', (size_t)length);
    if (found != NULL && is_content_usage_key(line, found - line)) {
        /* The rule value: after SP or HTAB, up to "#", without trailing SP or HTAB. */
        start = found - line + 1;
        end = length;
        while (start < end && is_blank(line[start])) {
            start++;
        }
        while (end > start && is_blank(line[end - 1])) {
            end--;
        }
        *value_start = start;
        *value_end = end;
        return KIND_CONTENT_USAGE;
    }
    if (found != NULL) {
        key_end = found - line;
        start = key_end + 1;
        end = length;
    }
    else {
        /* Exactly two tokens of the stripped line, separated by SP or HTAB (only):
         * "disallow /". Stripping (below) removes any other whitespace at their ends. */
        Py_ssize_t p, stripped_end = length;
        while (key_start < stripped_end && is_space(line[key_start])) {
            key_start++;
        }
        while (stripped_end > key_start && is_space(line[stripped_end - 1])) {
            stripped_end--;
        }
        p = key_start;
        while (p < stripped_end && !is_blank(line[p])) {
            p++;
        }
        if (p == stripped_end) {
            return KIND_NONE;
        }
        key_end = p;
        while (p < stripped_end && is_blank(line[p])) {
            p++;
        }
        start = p;
        while (p < stripped_end && !is_blank(line[p])) {
            p++;
        }
        if (p != stripped_end) {
            return KIND_NONE;
        }
        end = stripped_end;
    }
    while (key_start < key_end && is_space(line[key_start])) {
        key_start++;
    }
    while (key_end > key_start && is_space(line[key_end - 1])) {
        key_end--;
    }
    if (key_start == key_end) {
        return KIND_NONE;
    }
    while (start < end && is_space(line[start])) {
        start++;
    }
    while (end > start && is_space(line[end - 1])) {
        end--;
    }
    *value_start = start;
    *value_end = end;
    return key_kind(line + key_start, key_end - key_start);
}

/* Walks the lines of data[start:end), numbering them from a given line number. */
typedef struct {
    const unsigned char *data;
    Py_ssize_t position;
    Py_ssize_t end;
    Py_ssize_t line_no;
    int has_cr;
} LineReader;

static void
reader_init(LineReader *reader, const unsigned char *data, Py_ssize_t start, Py_ssize_t end,
            Py_ssize_t first_line_no)
{
    reader->data = data;
    reader->position = start;
    reader->end = end;
    reader->line_no = first_line_no - 1;
    reader->has_cr = memchr(data + start, '\r', (size_t)(end - start)) != NULL;
}

/* The next line as [*line_start, *line_start + *line_length), cut to MAX_LINE_OCTETS;
 * 0 at the end. */
static int
reader_next(LineReader *reader, Py_ssize_t *line_start, Py_ssize_t *line_length)
{
    const unsigned char *data = reader->data;
    Py_ssize_t start = reader->position, stop;
    if (start >= reader->end) {
        return 0;
    }
    if (reader->has_cr) {
        stop = start;
        while (stop < reader->end && data[stop] != '\n' && data[stop] != '\r') {
            stop++;
        }
    }
    else {
        const unsigned char *newline =
            memchr(data + start, '\n', (size_t)(reader->end - start));
        stop = newline != NULL ? newline - data : reader->end;
    }
    reader->position = stop;
    if (stop < reader->end) {
        reader->position = stop + 1;
        if (data[stop] == '\r' && stop + 1 < reader->end && data[stop + 1] == '\n') {
            reader->position = stop + 2;
        }
    }
    reader->line_no++;
    *line_start = start;
    *line_length = stop - start < MAX_LINE_OCTETS ? stop - start : MAX_LINE_OCTETS;
    return 1;
}

/* ------------------------------------------------------------------------------ */
/* GroupIndex                                                                     */
/* ------------------------------------------------------------------------------ */

typedef struct {
    Py_ssize_t start; /* offset of the group's first user-agent line */
    Py_ssize_t end;   /* offset of the next group's first line, or the body's length */
    Py_ssize_t line_no;
    Py_ssize_t first_agent; /* index into agents */
    Py_ssize_t agent_count;
} Group;

typedef struct {
    Py_ssize_t start;
    Py_ssize_t length;
} Span;

typedef struct {
    PyObject_HEAD
    PyObject *body; /* bytes */
    Group *groups;
    Py_ssize_t group_count;
    Span *agents;
    Py_ssize_t agent_count;
} GroupIndexObject;

/* Append one item to a PyMem array, doubling its capacity when full. */
static int
grow(void **items, Py_ssize_t *capacity, Py_ssize_t count, size_t item_size)
{
    void *bigger;
    Py_ssize_t new_capacity;
    if (count < *capacity) {
        return 0;
    }
    new_capacity = *capacity ? *capacity * 2 : 8;
    bigger = PyMem_Realloc(*items, (size_t)new_capacity * item_size);
    if (bigger == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = bigger;
    *capacity = new_capacity;
    return 0;
}

/* Give back the unused capacity of a PyMem array: parsed files are kept for hours. */
static int
shrink(void **items, Py_ssize_t count, size_t item_size)
{
    void *smaller;
    if (*items == NULL) {
        return 0;
    }
    smaller = PyMem_Realloc(*items, (size_t)(count > 0 ? count : 1) * item_size);
    if (smaller == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = smaller;
    return 0;
}

static int
group_index_scan(GroupIndexObject *self)
{
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(self->body);
    Py_ssize_t size = PyBytes_GET_SIZE(self->body);
    Py_ssize_t group_capacity = 0, agent_capacity = 0, line_start, line_length;
    Py_ssize_t value_start, value_end;
    int saw_rule = 0;
    LineReader reader;

    reader_init(&reader, data, 0, size, 1);
    while (reader_next(&reader, &line_start, &line_length)) {
        int kind = classify(data + line_start, line_length, &value_start, &value_end);
        /* RFC 9309's rules, which draft-ietf-aipref-attach extends with Content-Usage. */
        if (kind == KIND_ALLOW || kind == KIND_DISALLOW || kind == KIND_CONTENT_USAGE) {
            saw_rule = 1;
            continue;
        }
        if (kind != KIND_USER_AGENT) {
            continue;
        }
        /* A user-agent line after a rule (or the first one) starts a group. */
        if (self->group_count == 0 || saw_rule) {
            Group *group;
            if (grow((void **)&self->groups, &group_capacity, self->group_count,
                     sizeof(Group)) < 0) {
                return -1;
            }
            if (self->group_count > 0) {
                self->groups[self->group_count - 1].end = line_start;
            }
            group = &self->groups[self->group_count++];
            group->start = line_start;
            group->end = size;
            group->line_no = reader.line_no;
            group->first_agent = self->agent_count;
            group->agent_count = 0;
        }
        if (grow((void **)&self->agents, &agent_capacity, self->agent_count, sizeof(Span)) < 0) {
            return -1;
        }
        self->agents[self->agent_count].start = line_start + value_start;
        self->agents[self->agent_count].length = value_end - value_start;
        self->agent_count++;
        self->groups[self->group_count - 1].agent_count++;
        saw_rule = 0;
    }
    if (shrink((void **)&self->groups, self->group_count, sizeof(Group)) < 0 ||
        shrink((void **)&self->agents, self->agent_count, sizeof(Span)) < 0) {
        return -1;
    }
    return 0;
}

static PyObject *
group_index_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *body;
    GroupIndexObject *self;
    static char *keywords[] = {"body", NULL};

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!:GroupIndex", keywords, &PyBytes_Type,
                                     &body)) {
        return NULL;
    }
    self = (GroupIndexObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(body);
    self->body = body;
    if (group_index_scan(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void
group_index_dealloc(GroupIndexObject *self)
{
    Py_XDECREF(self->body);
    PyMem_Free(self->groups);
    PyMem_Free(self->agents);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t
group_index_length(GroupIndexObject *self)
{
    return self->group_count;
}

/* Whether a user-agent value names token (lower-case product token, or "*"). */
static int
agent_names(const unsigned char *agent, Py_ssize_t length, const unsigned char *token,
            Py_ssize_t size)
{
    Py_ssize_t i;
    if (size == 1 && token[0] == '*') {
        return length >= 1 && agent[0] == '*' && (length == 1 || is_space(agent[1]));
    }
    if (length < size) {
        return 0;
    }
    for (i = 0; i < size; i++) {
        if (ascii_lower(agent[i]) != token[i]) {
            return 0;
        }
    }
    return length == size || !is_token_octet(agent[size]);
}

static PyObject *
group_index_naming(GroupIndexObject *self, PyObject *token)
{
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(self->body);
    const unsigned char *token_octets;
    Py_ssize_t size, g, a;
    PyObject *indexes;

    if (!PyBytes_Check(token)) {
        PyErr_SetString(PyExc_TypeError, "naming() takes bytes");
        return NULL;
    }
    token_octets = (const unsigned char *)PyBytes_AS_STRING(token);
    size = PyBytes_GET_SIZE(token);
    indexes = PyList_New(0);
    if (indexes == NULL) {
        return NULL;
    }
    for (g = 0; g < self->group_count; g++) {
        const Group *group = &self->groups[g];
        for (a = group->first_agent; a < group->first_agent + group->agent_count; a++) {
            const Span *agent = &self->agents[a];
            if (agent_names(data + agent->start, agent->length, token_octets, size)) {
                PyObject *index = PyLong_FromSsize_t(g);
                if (index == NULL || PyList_Append(indexes, index) < 0) {
                    Py_XDECREF(index);
                    Py_DECREF(indexes);
                    return NULL;
                }
                Py_DECREF(index);
                break;
            }
        }
    }
    return indexes;
}

static const Group *
group_at(GroupIndexObject *self, Py_ssize_t index)
{
    if (index < 0 || index >= self->group_count) {
        PyErr_SetString(PyExc_IndexError, "group index out of range");
        return NULL;
    }
    return &self->groups[index];
}

static PyObject *
group_index_agents(GroupIndexObject *self, PyObject *argument)
{
    const char *data = PyBytes_AS_STRING(self->body);
    Py_ssize_t index = PyLong_AsSsize_t(argument), i;
    const Group *group;
    PyObject *agents;

    if (index == -1 && PyErr_Occurred()) {
        return NULL;
    }
    group = group_at(self, index);
    if (group == NULL) {
        return NULL;
    }
    agents = PyList_New(group->agent_count);
    if (agents == NULL) {
        return NULL;
    }
    for (i = 0; i < group->agent_count; i++) {
        const Span *agent = &self->agents[group->first_agent + i];
        PyObject *value = PyBytes_FromStringAndSize(data + agent->start, agent->length);
        if (value == NULL) {
            Py_DECREF(agents);
            return NULL;
        }
        PyList_SET_ITEM(agents, i, value);
    }
    return agents;
}

static int
set_line_value(PyObject *table, Py_ssize_t line_no, const char *value, Py_ssize_t length)
{
    int result = -1;
    PyObject *key = PyLong_FromSsize_t(line_no);
    PyObject *item = PyBytes_FromStringAndSize(value, length);
    if (key != NULL && item != NULL) {
        result = PyDict_SetItem(table, key, item);
    }
    Py_XDECREF(key);
    Py_XDECREF(item);
    return result;
}

static PyObject *
group_index_collect(GroupIndexObject *self, PyObject *args)
{
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(self->body);
    Py_ssize_t index, line_start, line_length, value_start, value_end;
    PyObject *allows, *disallows, *crawl_delays;
    const Group *group;
    LineReader reader;

    if (!PyArg_ParseTuple(args, "nO!O!O!:collect", &index, &PyDict_Type, &allows, &PyDict_Type,
                          &disallows, &PyDict_Type, &crawl_delays)) {
        return NULL;
    }
    group = group_at(self, index);
    if (group == NULL) {
        return NULL;
    }
    reader_init(&reader, data, group->start, group->end, group->line_no);
    while (reader_next(&reader, &line_start, &line_length)) {
        PyObject *table;
        switch (classify(data + line_start, line_length, &value_start, &value_end)) {
        case KIND_ALLOW:
            table = allows;
            break;
        case KIND_DISALLOW:
            table = disallows;
            break;
        case KIND_CRAWL_DELAY:
            table = crawl_delays;
            break;
        default:
            continue;
        }
        if (set_line_value(table, reader.line_no, (const char *)data + line_start + value_start,
                           value_end - value_start) < 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
group_index_span(GroupIndexObject *self, PyObject *argument)
{
    Py_ssize_t index = PyLong_AsSsize_t(argument);
    const Group *group;

    if (index == -1 && PyErr_Occurred()) {
        return NULL;
    }
    group = group_at(self, index);
    if (group == NULL) {
        return NULL;
    }
    return Py_BuildValue("(nnn)", group->start, group->end, group->line_no);
}

static PyMethodDef group_index_methods[] = {
    {"naming", (PyCFunction)group_index_naming, METH_O,
     "Indexes of the groups naming token (a lower-case product token, or b'*')."},
    {"agents", (PyCFunction)group_index_agents, METH_O,
     "The User-agent values of group index, as written."},
    {"collect", (PyCFunction)group_index_collect, METH_VARARGS,
     "collect(index, allows, disallows, crawl_delays): add the group's records to the dicts "
     "(line number -> value)."},
    {"span", (PyCFunction)group_index_span, METH_O,
     "span(index): (start, end, line number of start) of the group in the body."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods group_index_as_sequence = {
    .sq_length = (lenfunc)group_index_length,
};

static PyTypeObject GroupIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "scrapy_rep9309.rules._speedups.GroupIndex",
    .tp_basicsize = sizeof(GroupIndexObject),
    .tp_dealloc = (destructor)group_index_dealloc,
    .tp_as_sequence = &group_index_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GroupIndex(body): the groups of one robots.txt body (see groups.py).",
    .tp_methods = group_index_methods,
    .tp_new = group_index_new,
};

/* ------------------------------------------------------------------------------ */
/* RuleSet                                                                        */
/* ------------------------------------------------------------------------------ */

/* A match key (octets, is_allow, -line) packed so that a larger integer is better. */
#define LINE_BITS 39
#define LINE_LIMIT ((((uint64_t)1) << LINE_BITS) - 1)

/* One compiled rule. Parsed files are kept for hours, so what only rules with a "*"
 * need is kept after their pattern (Stars), and the value as written is read again from
 * its line when asked (written()). */
typedef struct {
    uint64_t key;
    Py_ssize_t text;          /* offset of the normalised pattern (no final "$") in patterns */
    Py_ssize_t length;        /* of that pattern */
    Py_ssize_t first_length;  /* before its first "*"; == length when it has none */
    Py_ssize_t line_start;    /* offset of its line in the body; -1 when read from dicts */
    unsigned char anchored;
    unsigned char has_star;
} Rule;

/* What a rule with a "*" also needs, in patterns after its text (8-aligned), followed by
 * the KMP failure functions of its pieces, indexed like the text. */
typedef struct {
    /* The octets of the pieces after the first, by bit (a normalised pattern is ASCII):
     * a path lacking one of them cannot match, whatever the stars stand for. */
    uint64_t needs[2];
    Py_ssize_t last_start; /* after the last "*" */
} Stars;

/* The octets a path holds, by bit like Stars.needs: found once per decision, and only
 * when a rule with a "*" is tried. */
typedef struct {
    uint64_t has[2];
    int known;
} PathOctets;

/* A rule's place in a decision order: by bucket (the first BUCKET_KEY_LENGTH octets of
 * its pattern, big-endian), then best key first. The key is copied here so that a
 * decision compares keys without reading the rule. */
typedef struct {
    uint64_t key;
    uint32_t bucket;
    uint32_t rule; /* index into rules */
} Entry;

typedef struct {
    PyObject_HEAD
    Rule *rules;             /* in reading order */
    Py_ssize_t rule_count;
    char *patterns;          /* every rule's pattern, and the Stars of those with a "*" */
    Py_ssize_t patterns_size;
    Entry *buckets;          /* rules whose first piece has BUCKET_KEY_LENGTH octets or more */
    Py_ssize_t bucket_count;
    Entry *short_rules;      /* the others, best first */
    Py_ssize_t short_count;
    PyObject *body;          /* bytes the values were read in (from_groups); else NULL */
    PyObject *allows;        /* the dicts RuleSet(allows, disallows) was given; else NULL */
    PyObject *disallows;
} RuleSetObject;

/* Capacities while rules are added; the arrays are cut to size once all are in. */
typedef struct {
    RuleSetObject *set;
    Py_ssize_t rule_capacity;
    Py_ssize_t patterns_capacity;
} Builder;

static uint64_t
pack_key(Py_ssize_t octets, int allow, long long line)
{
    uint64_t line_part = line < 0 ? 0 : (uint64_t)line;
    if (line_part > LINE_LIMIT) {
        line_part = LINE_LIMIT;
    }
    return ((uint64_t)octets << (LINE_BITS + 1)) | ((uint64_t)(allow != 0) << LINE_BITS) |
           (LINE_LIMIT - line_part);
}

static Py_ssize_t
align8(Py_ssize_t offset)
{
    return (offset + 7) & ~(Py_ssize_t)7;
}

static const Stars *
stars_of(const RuleSetObject *self, const Rule *rule)
{
    return (const Stars *)(self->patterns + align8(rule->text + rule->length));
}

static const int32_t *
failure_of(const Stars *stars)
{
    return (const int32_t *)(stars + 1);
}

/* Make room for needed bytes in a PyMem block, at least doubling it. */
static int
reserve(char **block, Py_ssize_t *capacity, Py_ssize_t needed)
{
    char *bigger;
    Py_ssize_t new_capacity;
    if (needed <= *capacity) {
        return 0;
    }
    new_capacity = *capacity > needed / 2 ? 2 * *capacity : needed;
    if (new_capacity < 256) {
        new_capacity = 256;
    }
    bigger = PyMem_Realloc(*block, (size_t)new_capacity);
    if (bigger == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *block = bigger;
    *capacity = new_capacity;
    return 0;
}

/* Normalise octets as urlnorm.normalise_octets does, into out (3 * length room): kept
 * is URL_OCTET for a path, PATTERN_OCTET for a pattern (whose "*" stays). */
static Py_ssize_t
normalise_octets(const unsigned char *data, Py_ssize_t length, char *out, unsigned char kept)
{
    Py_ssize_t i = 0, written = 0;
    while (i < length) {
        unsigned char c = data[i];
        if (KEPT_OCTETS[c] & kept) {
            out[written++] = (char)c;
            i++;
            continue;
        }
        if (c == '%' && i + 2 < length && hex_value(data[i + 1]) >= 0 &&
            hex_value(data[i + 2]) >= 0) {
            int octet = hex_value(data[i + 1]) * 16 + hex_value(data[i + 2]);
            if (is_unreserved((unsigned char)octet)) {
                out[written++] = (char)octet;
            }
            else {
                out[written++] = '%';
                out[written++] = HEX_DIGITS[octet >> 4];
                out[written++] = HEX_DIGITS[octet & 15];
            }
            i += 3;
            continue;
        }
        out[written++] = '%';
        out[written++] = HEX_DIGITS[c >> 4];
        out[written++] = HEX_DIGITS[c & 15];
        i++;
    }
    return written;
}

/* failure[i] for i in [start, end): KMP prefix function of the piece text[start:end). */
static void
fill_failure(const char *text, int32_t *failure, Py_ssize_t start, Py_ssize_t end)
{
    Py_ssize_t i;
    int32_t matched = 0;
    if (start >= end) {
        return;
    }
    failure[start] = 0;
    for (i = start + 1; i < end; i++) {
        while (matched > 0 && text[i] != text[start + matched]) {
            matched = failure[start + matched - 1];
        }
        if (text[i] == text[start + matched]) {
            matched++;
        }
        failure[i] = matched;
    }
}

/* Left-most occurrence of piece (with its failure function) in haystack[from:]; -1 if
 * none. Linear: memchr finds candidates, KMP never re-reads an octet. */
static Py_ssize_t
find_piece(const char *haystack, Py_ssize_t length, Py_ssize_t from, const char *piece,
           Py_ssize_t size, const int32_t *failure)
{
    Py_ssize_t i = from, matched = 0;
    if (size == 0) {
        return from <= length ? from : -1;
    }
    while (i < length) {
        if (matched == 0) {
            const char *candidate = memchr(haystack + i, piece[0], (size_t)(length - i));
            if (candidate == NULL) {
                return -1;
            }
            i = candidate - haystack + 1;
            matched = 1;
        }
        else if (haystack[i] == piece[matched]) {
            i++;
            matched++;
        }
        else {
            matched = failure[matched - 1];
            continue;
        }
        if (matched == size) {
            return i - size;
        }
    }
    return -1;
}

/* Whether rule matches path from its first octet (matcher.WildcardRule.matches). */
static int
rule_matches(const RuleSetObject *self, const Rule *rule, const char *path, Py_ssize_t length,
             PathOctets *octets)
{
    const char *text = self->patterns + rule->text;
    const Stars *stars;
    const int32_t *failure;
    Py_ssize_t position, piece_start, last_start, last_length;
    if (length < rule->first_length || memcmp(path, text, (size_t)rule->first_length)) {
        return 0;
    }
    if (!rule->has_star) {
        return !rule->anchored || length == rule->first_length;
    }
    if (!octets->known) {
        for (position = 0; position < length; position++) {
            unsigned char c = (unsigned char)path[position];
            if (c < 128) {
                octets->has[c >> 6] |= (uint64_t)1 << (c & 63);
            }
        }
        octets->known = 1;
    }
    stars = stars_of(self, rule);
    if ((stars->needs[0] & ~octets->has[0]) | (stars->needs[1] & ~octets->has[1])) {
        return 0;
    }
    last_start = stars->last_start;
    last_length = rule->length - last_start;
    if (rule->anchored &&
        (length < last_length ||
         memcmp(path + length - last_length, text + last_start, (size_t)last_length))) {
        return 0;
    }
    /* Indexed like text: the failure function of each piece sits under the piece. */
    failure = failure_of(stars);
    position = rule->first_length;
    piece_start = rule->first_length + 1;
    while (piece_start < last_start) {
        const char *star = memchr(text + piece_start, '*', (size_t)(last_start - piece_start));
        Py_ssize_t piece_end = star - text; /* never NULL: the last "*" ends it */
        Py_ssize_t found = find_piece(path, length, position, text + piece_start,
                                      piece_end - piece_start, failure + piece_start);
        if (found < 0) {
            return 0;
        }
        position = found + (piece_end - piece_start);
        piece_start = piece_end + 1;
    }
    if (rule->anchored) {
        return length - last_length >= position;
    }
    return find_piece(path, length, position, text + last_start, last_length,
                      failure + last_start) >= 0;
}

/* Compile one rule: the pattern value[0:length), whose final "$" (if any) is already cut
 * off and given as anchored, read on the line at line_start of the body (or -1). */
static int
add_pattern(Builder *builder, const unsigned char *value, Py_ssize_t length, int anchored,
            int allow, long long line, Py_ssize_t line_start)
{
    RuleSetObject *self = builder->set;
    Rule *rule;
    char *text;
    Py_ssize_t start, written, p;
    int has_star = memchr(value, '*', (size_t)length) != NULL; /* normalising keeps "*" */

    if (length > PY_SSIZE_T_MAX / 16 - self->patterns_size || self->rule_count >= UINT32_MAX) {
        PyErr_NoMemory();
        return -1;
    }
    /* Room for the text (3 octets per octet at worst), alignment, Stars and failures;
     * one octet more, so that the block exists even if every pattern is empty ("$"). */
    if (reserve(&self->patterns, &builder->patterns_capacity,
                self->patterns_size + 3 * length + 1 +
                    (has_star ? 7 + (Py_ssize_t)sizeof(Stars) + 12 * length : 0)) < 0 ||
        reserve((char **)&self->rules, &builder->rule_capacity,
                (self->rule_count + 1) * (Py_ssize_t)sizeof(Rule)) < 0) {
        return -1;
    }
    start = self->patterns_size;
    text = self->patterns + start;
    written = normalise_octets(value, length, text, PATTERN_OCTET);
    rule = &self->rules[self->rule_count++];
    rule->text = start;
    rule->length = written;
    rule->anchored = (unsigned char)anchored;
    rule->has_star = (unsigned char)has_star;
    rule->line_start = line_start;
    rule->first_length = written;
    self->patterns_size = start + written;
    if (has_star) {
        Stars *stars = (Stars *)(self->patterns + align8(start + written));
        int32_t *failure = (int32_t *)(stars + 1);
        rule->first_length = (const char *)memchr(text, '*', (size_t)written) - text;
        for (p = written; text[p - 1] != '*'; p--) {
        }
        stars->last_start = p;
        stars->needs[0] = stars->needs[1] = 0;
        for (p = rule->first_length + 1; p < written; p++) {
            unsigned char c = (unsigned char)text[p];
            if (c != '*') { /* c < 128: normalised */
                stars->needs[c >> 6] |= (uint64_t)1 << (c & 63);
            }
        }
        /* Every piece after the first: between stars, and after the last one. */
        p = rule->first_length + 1;
        while (p <= written) {
            const char *next = memchr(text + p, '*', (size_t)(written - p));
            Py_ssize_t end = next != NULL ? next - text : written;
            fill_failure(text, failure, p, end);
            p = end + 1;
        }
        self->patterns_size = (char *)(failure + written) - self->patterns;
    }
    /* RFC 9309: the most specific match has the most octets; like Google's library, a
     * pattern's "*" and "$" count too. */
    rule->key = pack_key(written + anchored, allow, line);
    return 0;
}

static const char INDEX_PAGE[] = "/index.htm";

/* Compile the rule of one Allow or Disallow value (and the one it implies). */
static int
add_value(Builder *builder, const unsigned char *value, Py_ssize_t length, int allow,
          long long line, Py_ssize_t line_start)
{
    Py_ssize_t slash;
    int anchored;
    if (length == 0) { /* RFC 9309: an empty value matches nothing */
        return 0;
    }
    anchored = value[length - 1] == '$';
    if (add_pattern(builder, value, length - anchored, anchored, allow, line, line_start) < 0) {
        return -1;
    }
    if (!allow) {
        return 0;
    }
    /* Google's rule: "Allow: /dir/index.htm[l]" also allows "/dir/" itself ("/dir/$"). */
    for (slash = length - 1; slash >= 0 && value[slash] != '/'; slash--) {
    }
    if (slash >= 0 && length - slash >= (Py_ssize_t)(sizeof(INDEX_PAGE) - 1) &&
        memcmp(value + slash, INDEX_PAGE, sizeof(INDEX_PAGE) - 1) == 0) {
        return add_pattern(builder, value, slash + 1, 1, 1, line, line_start);
    }
    return 0;
}

static int
add_table(Builder *builder, PyObject *table, int allow)
{
    Py_ssize_t position = 0;
    PyObject *key, *value;
    while (PyDict_Next(table, &position, &key, &value)) {
        long long line = PyLong_AsLongLong(key);
        if (line == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (!PyBytes_Check(value)) {
            PyErr_SetString(PyExc_TypeError, "rule values must be bytes");
            return -1;
        }
        if (add_value(builder, (const unsigned char *)PyBytes_AS_STRING(value),
                      PyBytes_GET_SIZE(value), allow, line, -1) < 0) {
            return -1;
        }
    }
    return 0;
}

static uint32_t
bucket_of(const char *octets)
{
    const unsigned char *u = (const unsigned char *)octets;
    return ((uint32_t)u[0] << 24) | ((uint32_t)u[1] << 16) | ((uint32_t)u[2] << 8) | u[3];
}

static int
entry_before(const Entry *a, const Entry *b)
{
    return a->bucket != b->bucket ? a->bucket < b->bucket : a->key > b->key;
}

/* Sort entries in decision order: insertion sort of short runs, then bottom-up merges
 * through scratch (room for count entries). O(n log n) on any input, and with the
 * comparison inlined: a rule set is sorted once per crawler and file. */
static void
sort_entries(Entry *entries, Py_ssize_t count, Entry *scratch)
{
    const Py_ssize_t run = 8;
    Entry *from = entries, *to = scratch, *swap;
    Py_ssize_t start, i, j, width;
    for (start = 0; start < count; start += run) {
        Py_ssize_t end = start + run < count ? start + run : count;
        for (i = start + 1; i < end; i++) {
            Entry item = entries[i];
            for (j = i; j > start && entry_before(&item, &entries[j - 1]); j--) {
                entries[j] = entries[j - 1];
            }
            entries[j] = item;
        }
    }
    for (width = run; width < count; width *= 2) {
        for (start = 0; start < count; start += 2 * width) {
            Py_ssize_t middle = start + width < count ? start + width : count;
            Py_ssize_t end = start + 2 * width < count ? start + 2 * width : count;
            Py_ssize_t left = start, right = middle, out = start;
            while (left < middle && right < end) {
                to[out++] = entry_before(&from[right], &from[left]) ? from[right++] : from[left++];
            }
            while (left < middle) {
                to[out++] = from[left++];
            }
            while (right < end) {
                to[out++] = from[right++];
            }
        }
        swap = from;
        from = to;
        to = swap;
    }
    if (from != entries) {
        memcpy(entries, from, (size_t)count * sizeof(Entry));
    }
}

/* Once every rule is in: cut the arrays to size and sort the rules in decision order. */
static int
rule_set_index(RuleSetObject *self)
{
    Py_ssize_t i, bucketed = 0, size;
    Entry *scratch;
    if (self->rule_count == 0) {
        return 0; /* no rule: every decision is "allowed" */
    }
    if (shrink((void **)&self->rules, self->rule_count, sizeof(Rule)) < 0 ||
        shrink((void **)&self->patterns, self->patterns_size, 1) < 0) {
        return -1;
    }
    for (i = 0; i < self->rule_count; i++) {
        bucketed += self->rules[i].first_length >= BUCKET_KEY_LENGTH;
    }
    size = self->rule_count - bucketed > bucketed ? self->rule_count - bucketed : bucketed;
    self->buckets = PyMem_Malloc(sizeof(Entry) * (size_t)(bucketed > 0 ? bucketed : 1));
    self->short_rules =
        PyMem_Malloc(sizeof(Entry) * (size_t)(self->rule_count - bucketed > 0
                                                  ? self->rule_count - bucketed
                                                  : 1));
    scratch = PyMem_Malloc(sizeof(Entry) * (size_t)size);
    if (self->buckets == NULL || self->short_rules == NULL || scratch == NULL) {
        PyMem_Free(scratch);
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < self->rule_count; i++) {
        const Rule *rule = &self->rules[i];
        Entry entry = {rule->key, 0, (uint32_t)i};
        if (rule->first_length >= BUCKET_KEY_LENGTH) {
            entry.bucket = bucket_of(self->patterns + rule->text);
            self->buckets[self->bucket_count++] = entry;
        }
        else {
            self->short_rules[self->short_count++] = entry;
        }
    }
    sort_entries(self->buckets, self->bucket_count, scratch);
    sort_entries(self->short_rules, self->short_count, scratch);
    PyMem_Free(scratch);
    return 0;
}

static void
rule_set_dealloc(RuleSetObject *self)
{
    PyMem_Free(self->rules);
    PyMem_Free(self->patterns);
    PyMem_Free(self->buckets);
    PyMem_Free(self->short_rules);
    Py_XDECREF(self->body);
    Py_XDECREF(self->allows);
    Py_XDECREF(self->disallows);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
rule_set_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *allows, *disallows;
    RuleSetObject *self;
    Builder builder = {NULL, 0, 0};
    static char *keywords[] = {"allows", "disallows", NULL};

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!:RuleSet", keywords, &PyDict_Type,
                                     &allows, &PyDict_Type, &disallows)) {
        return NULL;
    }
    self = (RuleSetObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(allows);
    self->allows = allows;
    Py_INCREF(disallows);
    self->disallows = disallows;
    builder.set = self;
    if (add_table(&builder, allows, 1) < 0 || add_table(&builder, disallows, 0) < 0 ||
        rule_set_index(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* RuleSet.from_groups(groups, indexes): read the rules straight from the groups' lines,
 * with no Python object per rule; values as written stay in the body (see written). */
static PyObject *
rule_set_from_groups(PyObject *type, PyObject *args)
{
    GroupIndexObject *groups;
    PyObject *indexes, *sequence;
    RuleSetObject *self;
    Builder builder = {NULL, 0, 0};
    const unsigned char *data;
    Py_ssize_t i, line_start, line_length, value_start, value_end;

    if (!PyArg_ParseTuple(args, "O!O:from_groups", &GroupIndexType, &groups, &indexes)) {
        return NULL;
    }
    sequence = PySequence_Fast(indexes, "from_groups() takes a sequence of group indexes");
    if (sequence == NULL) {
        return NULL;
    }
    self = (RuleSetObject *)((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 0);
    if (self == NULL) {
        Py_DECREF(sequence);
        return NULL;
    }
    Py_INCREF(groups->body);
    self->body = groups->body;
    builder.set = self;
    data = (const unsigned char *)PyBytes_AS_STRING(groups->body);
    for (i = 0; i < PySequence_Fast_GET_SIZE(sequence); i++) {
        LineReader reader;
        const Group *group;
        Py_ssize_t index = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(sequence, i));
        if (index == -1 && PyErr_Occurred()) {
            goto error;
        }
        group = group_at(groups, index);
        if (group == NULL) {
            goto error;
        }
        /* Room for the group's rules at once (a rule's line has ten octets or more, and
         * most patterns are no longer than their line): fewer copies as the arrays grow. */
        if (reserve(&self->patterns, &builder.patterns_capacity,
                    self->patterns_size + (group->end - group->start)) < 0 ||
            reserve((char **)&self->rules, &builder.rule_capacity,
                    (self->rule_count + (group->end - group->start) / 10 + 1) *
                        (Py_ssize_t)sizeof(Rule)) < 0) {
            goto error;
        }
        reader_init(&reader, data, group->start, group->end, group->line_no);
        while (reader_next(&reader, &line_start, &line_length)) {
            int kind = classify(data + line_start, line_length, &value_start, &value_end);
            if ((kind == KIND_ALLOW || kind == KIND_DISALLOW) &&
                add_value(&builder, data + line_start + value_start, value_end - value_start,
                          kind == KIND_ALLOW, reader.line_no, line_start) < 0) {
                goto error;
            }
        }
    }
    Py_DECREF(sequence);
    if (rule_set_index(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;

error:
    Py_DECREF(sequence);
    Py_DECREF(self);
    return NULL;
}

/* The best rule matching a normalised path, as its decision-order entry; NULL if none. */
static const Entry *
rule_set_best(const RuleSetObject *self, const char *path, Py_ssize_t length)
{
    const Entry *best = NULL;
    PathOctets octets = {{0, 0}, 0};
    Py_ssize_t i;
    if (self->bucket_count > 0 && length >= BUCKET_KEY_LENGTH) {
        uint32_t bucket = bucket_of(path);
        Py_ssize_t low = 0, high = self->bucket_count;
        while (low < high) { /* the first entry of the bucket */
            Py_ssize_t middle = low + (high - low) / 2;
            if (self->buckets[middle].bucket < bucket) {
                low = middle + 1;
            }
            else {
                high = middle;
            }
        }
        for (i = low; i < self->bucket_count && self->buckets[i].bucket == bucket; i++) {
            if (rule_matches(self, &self->rules[self->buckets[i].rule], path, length, &octets)) {
                best = &self->buckets[i];
                break;
            }
        }
    }
    for (i = 0; i < self->short_count; i++) {
        const Entry *entry = &self->short_rules[i];
        if (best != NULL && entry->key <= best->key) {
            break;
        }
        if (rule_matches(self, &self->rules[entry->rule], path, length, &octets)) {
            best = entry;
            break;
        }
    }
    return best;
}

static PyObject *
match_key(uint64_t key)
{
    uint64_t octets = key >> (LINE_BITS + 1);
    int allow = (int)((key >> LINE_BITS) & 1);
    long long line = (long long)(LINE_LIMIT - (key & LINE_LIMIT));
    return Py_BuildValue("(KNL)", (unsigned long long)octets, PyBool_FromLong(allow), -line);
}

static PyObject *
rule_set_decide(RuleSetObject *self, PyObject *path)
{
    const char *octets;
    Py_ssize_t length;
    const Entry *best;
    if (!PyUnicode_Check(path)) {
        PyErr_SetString(PyExc_TypeError, "decide() takes a str path");
        return NULL;
    }
    octets = PyUnicode_AsUTF8AndSize(path, &length);
    if (octets == NULL) {
        return NULL;
    }
    best = rule_set_best(self, octets, length);
    if (best == NULL) {
        Py_RETURN_NONE;
    }
    return match_key(best->key);
}

/* The value of the Allow or Disallow line at line_start of body, read as from_groups
 * read it: a line ends at CR or LF (within a group either ends lines, or LF alone where
 * the group holds no CR, and then no CR is on the line either). */
static PyObject *
value_as_written(PyObject *body, Py_ssize_t line_start)
{
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(body);
    Py_ssize_t size = PyBytes_GET_SIZE(body), end = line_start, value_start = 0, value_end = 0;
    while (end < size && data[end] != '\n' && data[end] != '\r') {
        end++;
    }
    if (end - line_start > MAX_LINE_OCTETS) {
        end = line_start + MAX_LINE_OCTETS;
    }
    classify(data + line_start, end - line_start, &value_start, &value_end);
    return PyBytes_FromStringAndSize((const char *)data + line_start + value_start,
                                     value_end - value_start);
}

/* written(key): the value of the rule a match key of decide() stands for, as written. */
static PyObject *
rule_set_written(RuleSetObject *self, PyObject *key)
{
    unsigned long long octets;
    int allow;
    long long negative_line;
    uint64_t packed;
    Py_ssize_t i;
    if (!PyTuple_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "written() takes a match key (octets, allow, -line)");
        return NULL;
    }
    if (!PyArg_ParseTuple(key, "KpL:written", &octets, &allow, &negative_line)) {
        return NULL;
    }
    if (self->allows != NULL) {
        PyObject *table = allow ? self->allows : self->disallows;
        PyObject *line = PyLong_FromLongLong(-negative_line);
        PyObject *value;
        if (line == NULL) {
            return NULL;
        }
        value = PyDict_GetItemWithError(table, line);
        Py_DECREF(line);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
        if (!PyErr_Occurred()) {
            PyErr_SetObject(PyExc_KeyError, key);
        }
        return NULL;
    }
    packed = pack_key((Py_ssize_t)octets, allow, -negative_line);
    for (i = 0; i < self->rule_count; i++) { /* explaining is rare: no index for it */
        const Rule *rule = &self->rules[i];
        if (rule->key == packed && self->body != NULL) {
            return value_as_written(self->body, rule->line_start);
        }
    }
    PyErr_SetObject(PyExc_KeyError, key);
    return NULL;
}

/* urlnorm.normalised_path, for URLs the fast path below cannot take. */
static PyObject *normalised_path_function = NULL;

static PyObject *
normalised_path(PyObject *url)
{
    if (normalised_path_function == NULL) {
        PyObject *module = PyImport_ImportModule("scrapy_rep9309.rules.urlnorm");
        if (module == NULL) {
            return NULL;
        }
        normalised_path_function = PyObject_GetAttrString(module, "normalised_path");
        Py_DECREF(module);
        if (normalised_path_function == NULL) {
            return NULL;
        }
    }
    return PyObject_CallOneArg(normalised_path_function, url);
}

/* Where the path and query of url[0:length) are, for the shapes urlnorm.path_and_query
 * reads alike whatever their octets are: "http[s]://host" followed by "/", "?", ";",
 * "#" or nothing, and "/path" (not "//"). The path is url[*start:*end), after a "/" when
 * *add_slash ("http://host?q" has the path "/?q", "http://host" has "/"). 0 for any
 * other shape. */
static int
locate_path(const char *url, Py_ssize_t length, Py_ssize_t *start, Py_ssize_t *end,
            int *add_slash)
{
    const char *fragment = memchr(url, '#', (size_t)length);
    Py_ssize_t p;
    if (fragment != NULL) { /* RFC 3986: the first "#" starts the fragment, wherever */
        length = fragment - url;
    }
    *end = length;
    *add_slash = 0;
    if (length >= 1 && url[0] == '/' && (length == 1 || url[1] != '/')) {
        *start = 0;
        return 1;
    }
    if (length >= 8 && memcmp(url, "https://", 8) == 0) {
        p = 8;
    }
    else if (length >= 7 && memcmp(url, "http://", 7) == 0) {
        p = 7;
    }
    else {
        return 0;
    }
    while (p < length && url[p] != '/' && url[p] != '?' && url[p] != ';') {
        p++;
    }
    *start = p;
    *add_slash = p == length || url[p] != '/';
    return 1;
}

static int
is_robots_txt(const char *path, Py_ssize_t length)
{
    return length == 11 && memcmp(path, "/robots.txt", 11) == 0;
}

/* Room for the normalised path of most URLs without a PyMem block. */
#define PATH_ROOM 512

static PyObject *
rule_set_allowed(RuleSetObject *self, PyObject *url)
{
    const char *octets;
    char room[PATH_ROOM], *buffer = NULL;
    Py_ssize_t length, start, end, p;
    int add_slash;
    const Entry *best;
    PyObject *owner = NULL; /* what octets points into, when not url itself */

    if (!PyUnicode_Check(url)) {
        PyErr_SetString(PyExc_TypeError, "allowed() takes a str URL");
        return NULL;
    }
    if (self->rule_count == 0) { /* nothing can match: no need to read the URL */
        Py_RETURN_TRUE;
    }
    if (PyUnicode_IS_ASCII(url)) {
        octets = (const char *)PyUnicode_DATA(url);
        length = PyUnicode_GET_LENGTH(url);
    }
    else {
        /* The UTF-8 octets (a lone surrogate fails: urlnorm knows what to do with it).
         * Multi-octet sequences hold no ASCII octet, so the path is found as in the text. */
        owner = PyUnicode_AsUTF8String(url);
        if (owner == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                return NULL;
            }
            PyErr_Clear();
        }
        octets = owner != NULL ? PyBytes_AS_STRING(owner) : NULL;
        length = owner != NULL ? PyBytes_GET_SIZE(owner) : 0;
    }
    if (octets != NULL && locate_path(octets, length, &start, &end, &add_slash)) {
        for (p = start; p < end && (KEPT_OCTETS[(unsigned char)octets[p]] & URL_OCTET); p++) {
        }
        if (p < end || add_slash) { /* normalise it (urlnorm.normalise_text) */
            Py_ssize_t room_needed = 3 * (end - start) + 1;
            buffer = room_needed <= PATH_ROOM ? room : PyMem_Malloc((size_t)room_needed);
            if (buffer == NULL) {
                Py_XDECREF(owner);
                return PyErr_NoMemory();
            }
            buffer[0] = '/';
            length = add_slash + normalise_octets((const unsigned char *)octets + start,
                                                  end - start, buffer + add_slash, URL_OCTET);
            octets = buffer;
            start = 0;
            end = length;
        }
    }
    else {
        Py_XDECREF(owner);
        owner = normalised_path(url);
        if (owner == NULL) {
            return NULL;
        }
        octets = PyUnicode_AsUTF8AndSize(owner, &length);
        if (octets == NULL) {
            Py_DECREF(owner);
            return NULL;
        }
        start = 0;
        end = length;
    }
    /* RFC 9309 2.3.1: the robots.txt itself is always allowed. */
    best = is_robots_txt(octets + start, end - start)
               ? NULL
               : rule_set_best(self, octets + start, end - start);
    if (buffer != room) {
        PyMem_Free(buffer);
    }
    Py_XDECREF(owner);
    if (best == NULL || (best->key >> LINE_BITS) & 1) {
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef rule_set_methods[] = {
    {"from_groups", (PyCFunction)rule_set_from_groups, METH_VARARGS | METH_CLASS,
     "from_groups(groups, indexes): the merged rules of the groups indexes of a GroupIndex."},
    {"decide", (PyCFunction)rule_set_decide, METH_O,
     "The match key (octets, is_allow, -line) of the best rule matching a normalised path; "
     "None if none does."},
    {"allowed", (PyCFunction)rule_set_allowed, METH_O,
     "Whether a URL (absolute, or a path) may be fetched; /robots.txt always may."},
    {"written", (PyCFunction)rule_set_written, METH_O,
     "The value of the rule a match key of decide() stands for, as written."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RuleSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "scrapy_rep9309.rules._speedups.RuleSet",
    .tp_basicsize = sizeof(RuleSetObject),
    .tp_dealloc = (destructor)rule_set_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RuleSet(allows, disallows): compiled rules, ready for decisions (see matcher.py).",
    .tp_methods = rule_set_methods,
    .tp_new = rule_set_new,
};

/* ------------------------------------------------------------------------------ */

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "scrapy_rep9309.rules._speedups",
    .m_doc = "Compiled twins of groups.GroupIndex and matcher.RuleSet.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *module;
    if (PyType_Ready(&GroupIndexType) < 0 || PyType_Ready(&RuleSetType) < 0) {
        return NULL;
    }
    module = PyModule_Create(&speedups_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&GroupIndexType);
    if (PyModule_AddObject(module, "GroupIndex", (PyObject *)&GroupIndexType) < 0) {
        Py_DECREF(&GroupIndexType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&RuleSetType);
    if (PyModule_AddObject(module, "RuleSet", (PyObject *)&RuleSetType) < 0) {
        Py_DECREF(&RuleSetType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
