/* nccl (label gpu): the NCCL layer on the grid's groups. Each rank needs a
 * GPU of its own (NCCL refuses two ranks on one device), so on a machine with
 * one GPU it runs on one rank, where every group is a communicator of one:
 * the collectives must then leave sums unchanged and gather the send buffer,
 * queued on the group's stream behind the compute stream's work. With more
 * ranks and GPUs the same checks hold with group sizes > 1. SKIP (77)
 * without the CUDA backend or a device. */
#include "test.h"
#include "grid/grid.h"
#include "backend/backend.h"
#ifdef AX_HAVE_CUDA
#include "comm/nccl.h"
#include "util/err.h"
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
#ifndef AX_HAVE_CUDA
    printf("SKIP nccl: built without the CUDA backend\n");
    MPI_Finalize();
    return 77;
#else
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (ax_backend_use("cuda") != 0) {
        printf("SKIP nccl: %s\n", ax_err_msg());
        MPI_Finalize();
        return 77;
    }
    ax_grid g;
    CHECK(ax_grid_init(&g, MPI_COMM_WORLD, P, 1, 1, 1) == 0, "grid");
    CHECK(g.data.nccl && g.X.nccl && g.tp.nccl, "every group has a communicator");
    size_t n = 1 << 20;
    const ax_backend *be = ax_be();
    float *h = malloc(n * 4 * P), *a = be->alloc(n * 4), *all = be->alloc(n * 4 * P), *rs = be->alloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000) + g.rank;
    be->copy(a, h, n * 4);
    /* the NCCL layer itself (comm.c skips groups of one), joined, then read
     * back through the compute stream */
    ax_nccl_coll(&g.data, AX_NCCL_SUM, 0, a, a, n);
    ax_nccl_join(&g.data);
    be->copy(h, a, n * 4);
    double bad = 0;
    for (size_t i = 0; i < n; i++) {
        double want = (double)P * (i % 1000) + (double)P * (P - 1) / 2;
        if (fabs(h[i] - want) > bad) bad = fabs(h[i] - want);
    }
    CHECK(bad == 0, "allreduce over data: max error %g", bad);
    ax_nccl_coll(&g.data, AX_NCCL_GATHER, 0, a, all, n);
    ax_nccl_join(&g.data);
    float first, head;
    be->copy(&first, all, 4);
    CHECK(first == h[0], "allgather: block 0 is rank 0's (%g, %g)", first, h[0]);
    ax_nccl_coll(&g.data, AX_NCCL_SCATTER, 0, all, rs, n / P);
    ax_nccl_join(&g.data);
    be->copy(&head, rs, 4);
    CHECK(head == P * h[(size_t)g.rank * (n / P)], "reduce-scatter: %g", head);
    CHECK(ax_nccl_done(&g.data), "the stream's collectives are done once read back");
    /* through comm.c: the same calls as on the CPU, non-blocking, then ax_wait */
    ax_req q;
    ax_iallreduce_f32(&g.data, a, n, &q);
    ax_wait(&q);
    be->copy(&head, a, 4);
    CHECK(head == P * h[0], "ax_iallreduce_f32 on the device: %g", head);
    ax_reducer r = ax_comm_reducer(&g.X);
    float v[4] = {1, 2, 3, 4};
    float *dv = be->alloc(sizeof v);
    be->copy(dv, v, sizeof v);
    r.sum(r.ctx, dv, 4);
    be->copy(v, dv, sizeof v);
    CHECK(v[3] == 4.0f * g.gx, "reducer over X: %g", v[3]);
    ax_comm sub;
    ax_comm_split(&g.data, 0, g.rank, &sub);
    CHECK(sub.nccl != NULL, "a group split from one with NCCL has NCCL");
    ax_comm_free(&sub);
    be->free(a);
    be->free(all);
    be->free(rs);
    be->free(dv);
    free(h);
    ax_grid_free(&g);
    int rc = ax_test_done("nccl");
    MPI_Finalize();
    return rc;
#endif
}
