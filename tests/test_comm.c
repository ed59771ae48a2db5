/* Collectives of src/comm on groups of this run's ranks: blocking and
 * non-blocking all-reduce (sum, max, f64), all-gather and reduce-scatter give
 * the exact sums (small integers in float) with the default part size and with
 * parts forced down to 7 elements, so that the several-call path that counts
 * beyond INT_MAX elements take is exercised on small buffers; two non-blocking
 * collectives in flight at once on different groups, driven by ax_test. */
#include "test.h"
#include "comm/comm.h"
#include "util/err.h"

#define N 1000

static ax_comm world, half; /* all ranks; ranks split by parity */

static float val(int rank, long i) { return (float)(rank * 1000 + i % 1000); }

static void check_group(ax_comm *c, const char *what, int nb) {
    int P = c->size, r = c->rank, ok = 1;
    /* rank of each group member in world numbering, for the expected sums */
    int *wr = ax_malloc(P * sizeof(int)), me = world.rank;
    MPI_Allgather(&me, 1, MPI_INT, wr, 1, MPI_INT, c->comm);
    float *a = ax_malloc(N * sizeof(float)), *big = ax_malloc((size_t)P * N * sizeof(float)),
          *out = ax_malloc((size_t)P * N * sizeof(float));
    ax_req q;
    /* all-reduce: sum and max */
    for (long i = 0; i < N; i++) a[i] = val(me, i);
    if (nb) {
        ax_iallreduce_f32(c, a, N, &q);
        while (!ax_test(&q)) {}
    } else ax_allreduce_f32(c, a, N);
    for (long i = 0; i < N; i++) {
        float s = 0;
        for (int p = 0; p < P; p++) s += val(wr[p], i);
        ok &= a[i] == s;
    }
    CHECK(ok, "%s: all-reduce sum wrong", what);
    if (!nb) {
        for (long i = 0; i < N; i++) a[i] = val(me, i);
        ax_allreduce_max_f32(c, a, N);
        int mx = 0;
        for (int p = 0; p < P; p++) mx = wr[p] > mx ? wr[p] : mx;
        ok = 1;
        for (long i = 0; i < N; i++) ok &= a[i] == val(mx, i);
        CHECK(ok, "%s: all-reduce max wrong", what);
        double d[N];
        for (long i = 0; i < N; i++) d[i] = 0.5 * val(me, i);
        ax_allreduce_f64(c, d, N);
        ok = 1;
        for (long i = 0; i < N; i++) {
            double s = 0;
            for (int p = 0; p < P; p++) s += 0.5 * val(wr[p], i);
            ok &= d[i] == s;
        }
        CHECK(ok, "%s: all-reduce f64 wrong", what);
    }
    /* all-gather: rank blocks in order */
    for (long i = 0; i < N; i++) a[i] = val(me, i);
    for (long i = 0; i < (long)P * N; i++) out[i] = -1;
    if (nb) {
        ax_iallgather_f32(c, a, out, N, &q);
        ax_wait(&q);
    } else ax_allgather_f32(c, a, out, N);
    ok = 1;
    for (int p = 0; p < P; p++)
        for (long i = 0; i < N; i++) ok &= out[(long)p * N + i] == val(wr[p], i);
    CHECK(ok, "%s: all-gather wrong", what);
    /* reduce-scatter: block r of the sum */
    for (long i = 0; i < (long)P * N; i++) big[i] = val(me, i) + (float)(i / N);
    if (nb) {
        ax_ireduce_scatter_f32(c, big, out, N, &q);
        ax_wait(&q);
    } else ax_reduce_scatter_f32(c, big, out, N);
    ok = 1;
    for (long i = 0; i < N; i++) {
        long gi = (long)r * N + i;
        float s = 0;
        for (int p = 0; p < P; p++) s += val(wr[p], gi) + (float)r;
        ok &= out[i] == s;
    }
    CHECK(ok, "%s: reduce-scatter wrong", what);
    free(wr);
    free(a);
    free(big);
    free(out);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm w, h;
    MPI_Comm_dup(MPI_COMM_WORLD, &w);
    ax_comm_from(&world, w);
    MPI_Comm_split(w, world.rank % 2, world.rank, &h);
    ax_comm_from(&half, h);
    const size_t chunks[] = {0, 7};
    for (int ci = 0; ci < 2; ci++) {
        ax_comm_set_chunk(chunks[ci]);
        for (int nb = 0; nb < 2; nb++) {
            char what[64];
            snprintf(what, sizeof what, "%s, %s parts", nb ? "non-blocking" : "blocking", ci ? "7-element" : "default");
            check_group(&world, what, nb);
            check_group(&half, what, nb);
        }
        /* two in flight on different groups */
        float a[N], b[N];
        for (long i = 0; i < N; i++) {
            a[i] = val(world.rank, i);
            b[i] = 2 * val(world.rank, i);
        }
        ax_req qa, qb;
        ax_iallreduce_f32(&world, a, N, &qa);
        ax_iallreduce_f32(&half, b, N, &qb);
        int da = 0, db = 0;
        while (!(da && db)) {
            da = da || ax_test(&qa);
            db = db || ax_test(&qb);
        }
        float sa = 0, sb = 0;
        for (int p = 0; p < world.size; p++) {
            sa += val(p, 5);
            if (p % 2 == world.rank % 2) sb += 2 * val(p, 5);
        }
        CHECK(a[5] == sa && b[5] == sb, "two collectives in flight: %g %g, expected %g %g", a[5], b[5], sa, sb);
    }
    CHECK(world.bytes > 0 || world.size == 1, "no bytes counted");
    ax_comm_free(&half);
    ax_comm_free(&world);
    int rc = ax_test_done("comm");
    MPI_Finalize();
    return rc;
}
