/* How much of a non-blocking all-reduce hides behind a GEMM, by progress
 * strategy (docs/algorithm.md §4, progress on CPUs): none (MPI moves it only at the final wait),
 * poll (ax_gemm's row bands, testing between them: what axonn.c does) and
 * thread (a second thread testing in a loop, under MPI_THREAD_MULTIPLE).
 *
 *   mpirun -np 2 build/bench_progress [--mb 16] [--n 1536] [--reps 5]
 *
 * Each rank times, single-threaded: the GEMM alone, the blocking all-reduce
 * alone, then the all-reduce started before the GEMM and waited for after,
 * per strategy. hidden = (gemm + allreduce - overlapped) / allreduce, the all-reduce
 * being the non-blocking one started and waited for at once. */
#include "backend/backend.h"
#include "comm/comm.h"
#include "util/err.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ax_req req;
static atomic_int stop;

static void *tester(void *arg) {
    (void)arg;
    struct timespec ts = {0, 20000}; /* 20 us between tests: a loop without pause takes a core */
    while (!atomic_load(&stop)) {
        int done = 0;
        MPI_Testall(req.n, req.r, &done, MPI_STATUSES_IGNORE);
        if (done) break;
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided, mb = 16, n = 1536, reps = 5;
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0); /* as axonn's main (src/cli/main.c) */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mb")) mb = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    ax_comm c;
    ax_comm_from(&c, dup);
    ax_be()->set_threads(1);
    size_t len = (size_t)mb << 18; /* floats */
    float *buf = ax_be()->alloc(len * 4), *a = ax_be()->alloc((size_t)n * n * 4),
          *b = ax_be()->alloc((size_t)n * n * 4), *y = ax_be()->alloc((size_t)n * n * 4);
    for (size_t i = 0; i < (size_t)n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.1f;
    }
    ax_mat A = ax_mat_f32(a, n, n), B = ax_mat_f32(b, n, n), Y = ax_mat_f32(y, n, n);
    double best[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9}; /* gemm, allreduce, none, poll, thread, non-blocking alone */
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 6; k++) {
            if (k == 4 && provided < MPI_THREAD_MULTIPLE) continue;
            ax_backend_set_progress(k == 3 ? ax_progress : NULL);
            MPI_Barrier(dup);
            double t = MPI_Wtime();
            if (k == 0) ax_gemm(1.0f, A, 0, B, 1, 0.0f, Y);
            else if (k == 1) ax_allreduce_f32(&c, buf, len);
            else if (k == 5) {
                ax_iallreduce_f32(&c, buf, len, &req);
                ax_wait(&req);
            } else {
                ax_iallreduce_f32(&c, buf, len, &req);
                pthread_t th;
                atomic_store(&stop, 0);
                if (k == 4) pthread_create(&th, NULL, tester, NULL);
                ax_gemm(1.0f, A, 0, B, 1, 0.0f, Y);
                if (k == 4) {
                    atomic_store(&stop, 1);
                    pthread_join(th, NULL);
                }
                ax_wait(&req);
            }
            t = MPI_Wtime() - t;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, dup);
            if (t < best[k]) best[k] = t;
        }
    }
    if (rank == 0) {
        printf(
            "all-reduce %d MiB over 2 ranks %.1f ms (non-blocking, started and waited: %.1f ms), GEMM %dx%dx%d %.1f ms "
            "(best of %d)\n",
            mb, best[1] * 1e3, best[5] * 1e3, n, n, n, best[0] * 1e3, reps);
        const char *names[] = {"none", "poll (axonn.c)", "thread"};
        for (int k = 2; k < 5; k++) {
            if (k == 4 && provided < MPI_THREAD_MULTIPLE) {
                printf("  thread: MPI_THREAD_MULTIPLE not provided\n");
                continue;
            }
            printf("  %-15s overlapped %.1f ms, hidden %.0f%% of the all-reduce\n", names[k - 2], best[k] * 1e3,
                   100 * (best[0] + best[5] - best[k]) / best[5]);
        }
    }
    ax_comm_free(&c);
    MPI_Finalize();
    return 0;
}
