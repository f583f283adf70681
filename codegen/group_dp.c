/* group_dp.c — the grouping's costs and the dynamic program over groupings (see
 * group_dp.h).
 *
 * Shape: the fusion paper's recurrence (seed 003, §3, Alg. 1) run from the outputs
 * towards the inputs, one group open at a time, over groups whose live-out is their last
 * member; with the options' dp_exports, a member may also be read by closed groups
 * (exported: Case I).
 *  - A state is the set of placed stages and the open group among them (its live-out the
 *    highest member). The first state opens the last output.
 *  - Case I: the open group absorbs a producer whose every reader is in the group (so the
 *    group keeps one live-out), when the larger group aligns, tiles within the overlap
 *    threshold and the cache budget (the tile model prices it), and stays within the cap.
 *  - Case II: the open group closes and pays its cost; the next group opens at the last
 *    unplaced stage that must be a live-out (an output, read by nobody, or read by a
 *    closed stage). Its readers are all placed, so groups open in the reverse order of
 *    their live-outs and every grouping has one path through the states.
 *  - F(state) is the least sum of costs over the choices. A memo keyed by the state's bits
 *    holds it, and a second memo keyed by a group's member bits holds the group's cost
 *    (growable bitsets: no cap on the number of stages).
 * The paper closes all open groups at once and so keeps several open; here they would
 * grow independently, and one at a time reaches the same groupings with far fewer states.
 * Groups built this way cannot form a cycle: a member's readers are in its group or in
 * groups closed before (placed first), which run after it, and no member reads a closed
 * group (a stage is placed only after all its readers). The paper's cycle test is thus
 * Case I's constant-time subset test.
 * Once the budget of groups priced is spent (or sixteen times as many states expanded),
 * a new state is not explored when some path has already placed every stage (the first
 * path down is found early: each state tries absorbing first). Before that, it takes the
 * first absorption it can, else Case II (PolyMage's greedy merging), so the search always
 * ends with a complete grouping.
 */
#include "codegen/group_dp.h"

#include "codegen/align.h"
#include "codegen/bitset.h"
#include "codegen/costs.h"
#include "codegen/tile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the stage graph ---------------------------------------------------------------- */

/* The stages that are not inlined and who reads whom among them. */
typedef struct dp_graph {
    int n, words;
    pm_word *cons;   /* n * words: the stages that read stage s (through inlined ones)   */
    pm_word *prods;  /* n * words: the stages s reads                                    */
    pm_word *live;   /* the stages that are not inlined                                  */
    bool *can;       /* may be a member of a fused group                                 */
    bool *output;    /* a pipeline output: a live-out of its group                       */
    double *bytes;   /* the stage's buffer at the estimates                              */
} dp_graph;

bool pm_group_is_output(const pm_pipeline *p, const pm_func *f)
{
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i] == f)
            return true;
    return false;
}

bool pm_group_fusible(const pm_plan *plan, int s)
{
    const pm_func *f = plan->poly->stages[s].func;
    if (!plan->o.fusion || plan->inlined[s] || f->kind != PM_FUNC_FUNCTION || f->ndims < 1)
        return false;
    pm_read *reads = NULL;
    int n = 0;
    bool ok = pm_align_reads(plan, s, &reads, &n);
    free(reads);
    return ok;
}

static void graph_free(dp_graph *g)
{
    free(g->cons);
    free(g->prods);
    free(g->live);
    free(g->can);
    free(g->output);
    free(g->bytes);
}

static bool graph_init(const pm_plan *plan, dp_graph *g)
{
    const pm_poly *poly = plan->poly;
    int n = poly->nstages, w = pm_bits_words(n);
    *g = (dp_graph){.n = n, .words = w};
    g->cons = calloc((size_t)n * (size_t)w + 1, sizeof *g->cons);
    g->prods = calloc((size_t)n * (size_t)w + 1, sizeof *g->prods);
    g->live = calloc((size_t)w + 1, sizeof *g->live);
    g->can = calloc((size_t)n + 1, sizeof *g->can);
    g->output = calloc((size_t)n + 1, sizeof *g->output);
    g->bytes = calloc((size_t)n + 1, sizeof *g->bytes);
    if (!g->cons || !g->prods || !g->live || !g->can || !g->output || !g->bytes)
        return false;
    for (int s = 0; s < n; s++) {
        if (plan->inlined[s])
            continue;
        pm_bit_set(g->live, s);
        g->can[s] = pm_group_fusible(plan, s);
        g->output[s] = pm_group_is_output(poly->pipeline, poly->stages[s].func);
        g->bytes[s] = pm_plan_storage_bytes(plan, poly->stages[s].storage);
    }
    for (int c = 0; c < n; c++) {
        if (plan->inlined[c])
            continue;
        pm_word *prods = &g->prods[(size_t)c * (size_t)w];
        pm_plan_producers(plan, c, prods);
        for (int p = 0; p < n; p++) {
            if (!pm_bit_get(prods, p))
                continue;
            if (plan->inlined[p]) /* read only in place: no edge between groups */
                prods[p / 64] &= ~((pm_word)1 << (p % 64));
            else
                pm_bit_set(&g->cons[(size_t)p * (size_t)w], c);
        }
    }
    return true;
}

static const pm_word *cons_of(const dp_graph *g, int s) { return &g->cons[(size_t)s * (size_t)g->words]; }
static const pm_word *prods_of(const dp_graph *g, int s) { return &g->prods[(size_t)s * (size_t)g->words]; }

/* The producers of a set's members outside the set, into out. */
static void outside_producers(const dp_graph *g, const pm_word *set, pm_word *out)
{
    pm_bits_clear(out, g->words);
    for (int s = pm_bits_next(set, g->words, 0); s >= 0; s = pm_bits_next(set, g->words, s + 1))
        pm_bits_or(out, prods_of(g, s), g->words);
    pm_bits_minus(out, set, g->words);
}

/* Is member s of group `set` (not its live-out) read after the group: exported? */
static bool read_outside(const dp_graph *g, const pm_word *set, int s)
{
    return !pm_bits_subset(&g->cons[(size_t)s * (size_t)g->words], set, g->words);
}

/* Memory traffic of a group, in bytes: its live-out's and its exported members' buffers
 * written once, each outside producer's buffer read once (a buffer read by two groups
 * is read twice). */
static double group_bytes(const dp_graph *g, const pm_word *set, int liveout, pm_word *scratch)
{
    outside_producers(g, set, scratch);
    double bytes = g->bytes[liveout];
    for (int s = pm_bits_next(set, g->words, 0); s >= 0; s = pm_bits_next(set, g->words, s + 1))
        if (s != liveout && read_outside(g, set, s))
            bytes += g->bytes[s];
    for (int p = pm_bits_next(scratch, g->words, 0); p >= 0;
         p = pm_bits_next(scratch, g->words, p + 1))
        bytes += g->bytes[p];
    return bytes;
}

double pm_group_costs(pm_plan *plan)
{
    dp_graph g;
    pm_word *set = NULL, *scratch = NULL;
    double total = 0;
    if (graph_init(plan, &g)) {
        set = calloc((size_t)g.words + 1, sizeof *set);
        scratch = calloc((size_t)g.words + 1, sizeof *scratch);
    }
    for (int i = 0; set && scratch && i < plan->ngroups; i++) {
        pm_group *gr = &plan->groups[i];
        pm_bits_clear(set, g.words);
        for (int m = 0; m < gr->nmembers; m++)
            pm_bit_set(set, gr->members[m]);
        if (!gr->tiled)
            gr->time = pm_tile_stage_time(plan, gr->liveout);
        gr->cost = gr->time + pm_costs.memory_byte_cost * group_bytes(&g, set, gr->liveout, scratch);
        total += gr->cost;
    }
    free(set);
    free(scratch);
    graph_free(&g);
    return total;
}

/* ---- memo tables keyed by words ------------------------------------------------------ */

/* Open addressing over (hash, key) with the keys in one growable arena of words; each
 * key maps to the index of its record in the caller's array (its insertion order). */
typedef struct word_table {
    size_t cap, count;       /* slots (a power of two) and keys                           */
    uint64_t *hash;          /* per slot; 0 = empty (hashes are forced odd)               */
    size_t *key_at, *key_len; /* per slot: the key's offset and length in the arena       */
    size_t *record;          /* per slot: the record index                                */
    pm_word *arena;
    size_t arena_len, arena_cap;
} word_table;

static uint64_t words_hash(const pm_word *k, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ len;
    for (size_t i = 0; i < len; i++) {
        h ^= k[i];
        h *= 0xff51afd7ed558ccdu;
        h ^= h >> 33;
    }
    return h | 1;
}

static void table_free(word_table *t)
{
    free(t->hash);
    free(t->key_at);
    free(t->key_len);
    free(t->record);
    free(t->arena);
    memset(t, 0, sizeof *t);
}

/* The slot of key k: where it is, or the empty slot where it would go. */
static size_t table_slot(const word_table *t, const pm_word *k, size_t len, uint64_t h)
{
    size_t i = h & (t->cap - 1);
    while (t->hash[i] && !(t->hash[i] == h && t->key_len[i] == len &&
                           pm_bits_equal(&t->arena[t->key_at[i]], k, (int)len)))
        i = (i + 1) & (t->cap - 1);
    return i;
}

static bool table_grow(word_table *t)
{
    word_table bigger = *t;
    bigger.cap = t->cap ? t->cap * 2 : 1024;
    bigger.hash = calloc(bigger.cap, sizeof *bigger.hash);
    bigger.key_at = malloc(bigger.cap * sizeof *bigger.key_at);
    bigger.key_len = malloc(bigger.cap * sizeof *bigger.key_len);
    bigger.record = malloc(bigger.cap * sizeof *bigger.record);
    if (!bigger.hash || !bigger.key_at || !bigger.key_len || !bigger.record) {
        free(bigger.hash);
        free(bigger.key_at);
        free(bigger.key_len);
        free(bigger.record);
        return false;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->hash[i])
            continue;
        size_t j = table_slot(&bigger, &t->arena[t->key_at[i]], t->key_len[i], t->hash[i]);
        bigger.hash[j] = t->hash[i];
        bigger.key_at[j] = t->key_at[i];
        bigger.key_len[j] = t->key_len[i];
        bigger.record[j] = t->record[i];
    }
    free(t->hash);
    free(t->key_at);
    free(t->key_len);
    free(t->record);
    *t = bigger;
    return true;
}

/* The record index of key k, or -1 when absent. */
static long table_find(const word_table *t, const pm_word *k, size_t len)
{
    if (!t->cap)
        return -1;
    size_t i = table_slot(t, k, len, words_hash(k, len));
    return t->hash[i] ? (long)t->record[i] : -1;
}

/* Adds key k as record t->count (k absent); false when out of memory. */
static bool table_add(word_table *t, const pm_word *k, size_t len)
{
    if ((t->count + 1) * 2 > t->cap && !table_grow(t))
        return false;
    if (t->arena_len + len > t->arena_cap) {
        size_t cap = (t->arena_cap + len) * 2;
        pm_word *a = realloc(t->arena, cap * sizeof *a);
        if (!a)
            return false;
        t->arena = a;
        t->arena_cap = cap;
    }
    uint64_t h = words_hash(k, len);
    size_t i = table_slot(t, k, len, h);
    pm_bits_copy(&t->arena[t->arena_len], k, (int)len);
    t->hash[i] = h;
    t->key_at[i] = t->arena_len;
    t->key_len[i] = len;
    t->record[i] = t->count++;
    t->arena_len += len;
    return true;
}

/* ---- the search ---------------------------------------------------------------------- */

enum { ACT_NONE, ACT_ABSORB, ACT_CLOSE };

/* What the memo holds per state: the least cost from it on and the first step there. */
typedef struct dp_state {
    double cost;
    int act;
    int stage;   /* ACT_ABSORB: the stage absorbed; ACT_CLOSE: the next live-out, or -1 */
} dp_state;

typedef struct dp {
    const pm_plan *plan;
    dp_graph g;
    int cap;                 /* the most members of a group                              */
    long budget, expanded, priced;
    bool exhausted, nomem;
    bool complete;           /* some path has placed every stage                          */
    word_table group_memo;   /* member bits -> group_cost[]                              */
    double *group_cost;
    size_t group_cost_cap;
    word_table state_memo;   /* state key -> states[]                                   */
    dp_state *states;
    size_t states_cap;
    pm_word *scratch;
} dp;

/* The cost of the group with member bits `set` (members sorted, the last the live-out),
 * INFINITY when it does not align or no tile passes the model. */
static double price_group(dp *d, const pm_word *set)
{
    const dp_graph *g = &d->g;
    int n = pm_bits_count(set, g->words), liveout = pm_bits_last(set, g->words);
    double bytes = group_bytes(g, set, liveout, d->scratch);
    d->priced++;
    if (n == 1)
        return pm_tile_stage_time(d->plan, liveout) + pm_costs.memory_byte_cost * bytes;
    pm_group gr = {.nmembers = n, .liveout = liveout, .tiled = true};
    gr.members = malloc((size_t)n * sizeof *gr.members);
    gr.align = calloc((size_t)n, sizeof *gr.align);
    gr.fp = calloc((size_t)n, sizeof *gr.fp);
    gr.exported = calloc((size_t)n, sizeof *gr.exported);
    double cost = INFINITY;
    bool can = true;
    if (!gr.members || !gr.align || !gr.fp || !gr.exported) {
        d->nomem = true;
    } else {
        int m = 0;
        for (int s = pm_bits_next(set, g->words, 0); s >= 0; s = pm_bits_next(set, g->words, s + 1)) {
            gr.exported[m] = s != liveout && read_outside(g, set, s);
            gr.members[m++] = s;
            can = can && g->can[s];
        }
        if (can && pm_align_group(d->plan, gr.members, n, gr.align) && pm_tile_model(d->plan, &gr))
            cost = gr.time + pm_costs.memory_byte_cost * bytes;
    }
    free(gr.members);
    free(gr.align);
    free(gr.fp);
    free(gr.exported);
    return cost;
}

/* The memoized price_group. */
static double group_cost(dp *d, const pm_word *set)
{
    size_t w = (size_t)d->g.words;
    long r = table_find(&d->group_memo, set, w);
    if (r >= 0)
        return d->group_cost[r];
    double cost = price_group(d, set);
    if (d->group_memo.count >= d->group_cost_cap) {
        size_t cap = d->group_cost_cap ? d->group_cost_cap * 2 : 256;
        double *a = realloc(d->group_cost, cap * sizeof *a);
        if (!a) {
            d->nomem = true;
            return cost;
        }
        d->group_cost = a;
        d->group_cost_cap = cap;
    }
    if (!table_add(&d->group_memo, set, w)) {
        d->nomem = true;
        return cost;
    }
    d->group_cost[d->group_memo.count - 1] = cost;
    return cost;
}

/* A state's key: the placed stages P, then the open group's members H (H within P). */
static size_t key_len(const dp *d) { return 2 * (size_t)d->g.words; }
static pm_word *key_open(pm_word *key, const dp *d) { return key + d->g.words; }
static const pm_word *key_open_c(const pm_word *key, const dp *d) { return key + d->g.words; }

static double solve(dp *d, const pm_word *key);

/* Records the state's result in the memo. */
static void remember(dp *d, const pm_word *key, const dp_state *st)
{
    if (d->state_memo.count >= d->states_cap) {
        size_t cap = d->states_cap ? d->states_cap * 2 : 1024;
        dp_state *a = realloc(d->states, cap * sizeof *a);
        if (!a) {
            d->nomem = true;
            return;
        }
        d->states = a;
        d->states_cap = cap;
    }
    if (!table_add(&d->state_memo, key, key_len(d))) {
        d->nomem = true;
        return;
    }
    d->states[d->state_memo.count - 1] = *st;
}

/* Case I: the open group absorbs producer p when every reader of p is in the group
 * and the larger group prices (aligns and tiles). With the options' dp_exports, p may
 * also have readers in closed groups (all its readers placed): it is then exported
 * (pm_group.exported), and its closed readers run after this group. A reader not yet
 * placed would run before it: no such p is absorbed. With greedy, the first that
 * prices is taken. */
static void try_absorb(dp *d, const pm_word *key, bool greedy, dp_state *best)
{
    const dp_graph *g = &d->g;
    int w = g->words;
    const pm_word *H = key_open_c(key, d);
    if (!g->can[pm_bits_last(H, w)] || pm_bits_count(H, w) >= d->cap)
        return;
    pm_word *child = malloc(key_len(d) * sizeof *child), *cand = malloc((size_t)w * sizeof *cand);
    if (!child || !cand)
        d->nomem = true;
    if (child && cand) {
        outside_producers(g, H, cand);
        pm_bits_minus(cand, key, w);
    }
    for (int p = child && cand ? pm_bits_next(cand, w, 0) : -1; p >= 0 && !d->nomem;
         p = pm_bits_next(cand, w, p + 1)) {
        if (!g->can[p] || g->output[p] ||
            !pm_bits_subset(cons_of(g, p), d->plan->o.dp_exports ? key : H, w))
            continue;
        pm_bits_copy(child, key, (int)key_len(d));
        pm_bit_set(child, p);
        pm_bit_set(key_open(child, d), p);
        if (group_cost(d, key_open(child, d)) == INFINITY)
            continue;
        double c = solve(d, child);
        if (c < best->cost)
            *best = (dp_state){c, ACT_ABSORB, p};
        if (greedy)
            break;
    }
    free(child);
    free(cand);
}

/* The next group to open once every placed stage is closed: the last unplaced stage
 * that must be a live-out (an output, read by nobody, or read by a closed stage), or -1
 * when every stage is placed. The last one: its readers are all placed, so the groups
 * open in the reverse order of their live-outs, and each grouping has one path here. */
static int next_root(const dp *d, const pm_word *placed)
{
    const dp_graph *g = &d->g;
    for (int s = g->n - 1; s >= 0; s--) {
        if (!pm_bit_get(g->live, s) || pm_bit_get(placed, s))
            continue;
        const pm_word *c = cons_of(g, s);
        if (g->output[s] || !pm_bits_any(c, g->words))
            return s;
        for (int k = 0; k < g->words; k++)
            if (c[k] & placed[k])
                return s;
    }
    return -1;
}

/* Case II: the open group closes and pays its cost; the next live-out opens a group. */
static void try_close(dp *d, const pm_word *key, dp_state *best)
{
    double cost = group_cost(d, key_open_c(key, d));
    int r = next_root(d, key);
    d->complete = d->complete || r < 0;
    if (r >= 0) {
        pm_word *child = calloc(key_len(d), sizeof *child);
        if (!child) {
            d->nomem = true;
            return;
        }
        pm_bits_copy(child, key, d->g.words);
        pm_bit_set(child, r);
        pm_bit_set(key_open(child, d), r);
        cost += solve(d, child);
        free(child);
    }
    if (cost < best->cost)
        *best = (dp_state){cost, ACT_CLOSE, r};
}

/* F(state): the least cost of the open group and of everything left to place. */
static double solve(dp *d, const pm_word *key)
{
    long r = table_find(&d->state_memo, key, key_len(d));
    if (r >= 0)
        return d->states[r].cost;
    dp_state best = {INFINITY, ACT_NONE, -1};
    bool greedy = d->priced >= d->budget || d->expanded >= 16 * d->budget;
    d->exhausted = d->exhausted || greedy;
    /* past the budget, with a grouping found: this way is not taken */
    if (!d->nomem && !(greedy && d->complete)) {
        d->expanded++;
        try_absorb(d, key, greedy, &best);
        if (!(greedy && best.act == ACT_ABSORB))
            try_close(d, key, &best);
    }
    remember(d, key, &best);
    return best.cost;
}

/* Appends member bits H to out as a sorted member list. */
static bool emit_group(const dp *d, const pm_word *H, pm_dp_grouping *out)
{
    int w = d->g.words, n = pm_bits_count(H, w), m = 0;
    int *nm = realloc(out->nmembers, (size_t)(out->ngroups + 1) * sizeof *nm);
    if (nm)
        out->nmembers = nm;
    int **mm = realloc(out->members, (size_t)(out->ngroups + 1) * sizeof *mm);
    if (mm)
        out->members = mm;
    int *list = malloc((size_t)n * sizeof *list + 1);
    if (!nm || !mm || !list) {
        free(list);
        return false;
    }
    for (int s = pm_bits_next(H, w, 0); s >= 0; s = pm_bits_next(H, w, s + 1))
        list[m++] = s;
    out->nmembers[out->ngroups] = n;
    out->members[out->ngroups++] = list;
    return true;
}

/* Follows the memo's first steps from the initial state, emitting each closed group. */
static bool replay(const dp *d, pm_word *key, pm_dp_grouping *out)
{
    for (;;) {
        long r = table_find(&d->state_memo, key, key_len(d));
        if (r < 0 || d->states[r].act == ACT_NONE)
            return false;
        dp_state st = d->states[r];
        if (st.act == ACT_CLOSE) {
            if (!emit_group(d, key_open(key, d), out))
                return false;
            if (st.stage < 0)
                return true;
            pm_bits_clear(key_open(key, d), d->g.words);
        }
        pm_bit_set(key, st.stage);
        pm_bit_set(key_open(key, d), st.stage);
    }
}

void pm_dp_grouping_free(pm_dp_grouping *g)
{
    for (int i = 0; g->members && i < g->ngroups; i++)
        free(g->members[i]);
    free(g->members);
    free(g->nmembers);
    memset(g, 0, sizeof *g);
}

/* The groups in execution order: the reverse of the order they closed in. A group closes
 * after every group that reads its members (their readers were placed first), so this
 * is a topological order of the groups; without exported members it is the order of
 * their live-outs (each group opens at the last unplaced live-out). */
static void reverse_order(pm_dp_grouping *out)
{
    for (int i = 0, j = out->ngroups - 1; i < j; i++, j--) {
        int *a = out->members[i];
        out->members[i] = out->members[j], out->members[j] = a;
        int t = out->nmembers[i];
        out->nmembers[i] = out->nmembers[j], out->nmembers[j] = t;
    }
}

bool pm_group_dp(pm_plan *plan, pm_dp_grouping *out)
{
    memset(out, 0, sizeof *out);
    dp d = {.plan = plan, .cap = plan->o.dp_group_cap, .budget = plan->o.dp_budget};
    bool ok = graph_init(plan, &d.g);
    int w = d.g.words;
    d.scratch = ok ? calloc((size_t)w + 1, sizeof *d.scratch) : NULL;
    pm_word *key = ok ? calloc(2 * (size_t)w + 1, sizeof *key) : NULL;
    ok = ok && d.scratch && key;
    int root = ok ? next_root(&d, key) : -1;
    if (root >= 0) { /* the first state: the last output (or stage nobody reads) open */
        pm_bit_set(key, root);
        pm_bit_set(key_open(key, &d), root);
        double cost = solve(&d, key);
        /* INFINITY: no complete grouping (cannot happen: a group can always close); the
         * caller keeps greedy's */
        pm_bits_clear(key, 2 * w);
        pm_bit_set(key, root);
        pm_bit_set(key_open(key, &d), root);
        ok = !d.nomem && (cost == INFINITY || replay(&d, key, out));
        plan->grouping.cost = cost;
    }
    if (ok)
        reverse_order(out);
    else
        pm_dp_grouping_free(out);
    plan->grouping.states = d.expanded;
    plan->grouping.priced = d.priced;
    plan->grouping.exhausted = d.exhausted;
    free(key);
    free(d.scratch);
    free(d.group_cost);
    free(d.states);
    table_free(&d.group_memo);
    table_free(&d.state_memo);
    graph_free(&d.g);
    return ok;
}

/* Whether member list `members` (sorted, n of them) is a group of one live-out: every
 * member but the last is read only inside it and is not an output. */
static bool one_live_out(const dp *d, const int *members, int n, pm_word *set)
{
    const dp_graph *g = &d->g;
    pm_bits_clear(set, g->words);
    for (int m = 0; m < n; m++)
        pm_bit_set(set, members[m]);
    for (int m = 0; m < n - 1; m++)
        if (g->output[members[m]] || !pm_bits_subset(cons_of(g, members[m]), set, g->words))
            return false;
    return n <= d->cap || n == 1;
}

double pm_group_dp_price(const pm_plan *plan, const pm_dp_grouping *grouping)
{
    dp d = {.plan = plan, .cap = plan->o.dp_group_cap};
    double total = 0;
    bool ok = graph_init(plan, &d.g);
    pm_word *set = ok ? calloc((size_t)d.g.words + 1, sizeof *set) : NULL;
    d.scratch = ok ? calloc((size_t)d.g.words + 1, sizeof *d.scratch) : NULL;
    ok = ok && set && d.scratch;
    for (int i = 0; ok && i < grouping->ngroups && total < INFINITY; i++)
        total += one_live_out(&d, grouping->members[i], grouping->nmembers[i], set)
                     ? price_group(&d, set)
                     : INFINITY;
    free(set);
    free(d.scratch);
    graph_free(&d.g);
    return ok && !d.nomem ? total : NAN;
}
