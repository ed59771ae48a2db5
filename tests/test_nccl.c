/* nccl (label gpu): the device collectives on the grid's groups. Where the
 * ranks drive distinct GPUs every group of more than one rank has an NCCL
 * communicator, checked directly and through comm.c; where they share one
 * (several ranks on one GPU, or --mpi: every group asked to use MPI) no group
 * has one and comm.c stages the same collectives through host buffers. A
 * group of one has none (sums stay unchanged, gathers copy the send buffer),
 * so on one rank the NCCL layer is checked on a communicator of one made
 * for the purpose. SKIP (77) without the CUDA backend or a device.
 *   mpirun -np 4 build/test_nccl [--mpi]     (4 ranks on however many GPUs) */
#include "test.h"
#include "grid/grid.h"
#include "backend/backend.h"
#ifdef AX_HAVE_CUDA
#include "comm/nccl.h"
#include "comm/devices.h"
#include "util/err.h"
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
#ifndef AX_HAVE_CUDA
    printf("SKIP nccl: built without the CUDA backend\n");
    MPI_Finalize();
    return 77;
#else
    int P, local, nlocal;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (argc > 1 && !strcmp(argv[1], "--mpi")) ax_set_device_comm(AX_DEVICE_COMM_MPI);
    ax_node_rank(MPI_COMM_WORLD, &local, &nlocal);
    if (ax_backend_use("cuda", local) != 0) {
        printf("SKIP nccl: %s\n", ax_err_msg());
        MPI_Finalize();
        return 77;
    }
    ax_grid g;
    CHECK(ax_grid_init(&g, MPI_COMM_WORLD, P, 1, 1, 1) == 0, "grid");
    int shared = ax_comm_shares_device(&g.data), nccl = !shared && ax_get_device_comm() == AX_DEVICE_COMM_AUTO;
    /* grid P,1,1,1: data has P ranks, X and X x Y x Z one each */
    CHECK(!g.data.nccl == !(nccl && P > 1) && !g.X.nccl && !g.tp.nccl,
          "groups on NCCL exactly where they have ranks on distinct GPUs (shared %d, nccl %d)", shared, nccl);
    ax_comm one; /* one rank: a communicator of one, made for the NCCL layer's checks */
    MPI_Comm self;
    MPI_Comm_dup(MPI_COMM_SELF, &self);
    ax_comm_from(&one, self);
    if (nccl && P == 1) ax_nccl_attach(&one);
    ax_comm *nc = P == 1 ? &one : &g.data;
    size_t n = 1 << 20;
    const ax_backend *be = ax_be();
    float *h = malloc(n * 4 * P), *a = be->alloc(n * 4), *all = be->alloc(n * 4 * P), *rs = be->alloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000) + g.rank;
    be->copy(a, h, n * 4);
    if (nccl) {
        /* the NCCL layer itself (comm.c skips groups of one), joined, then read
         * back through the compute stream */
        ax_nccl_coll(nc, AX_NCCL_SUM, 0, a, a, n);
        ax_nccl_join(nc);
        be->copy(h, a, n * 4);
        double bad = 0;
        for (size_t i = 0; i < n; i++) {
            double want = (double)P * (i % 1000) + (double)P * (P - 1) / 2;
            if (fabs(h[i] - want) > bad) bad = fabs(h[i] - want);
        }
        CHECK(bad == 0, "allreduce over data: max error %g", bad);
        ax_nccl_coll(nc, AX_NCCL_GATHER, 0, a, all, n);
        ax_nccl_join(nc);
        float first, head;
        be->copy(&first, all, 4);
        CHECK(first == h[0], "allgather: block 0 is rank 0's (%g, %g)", first, h[0]);
        ax_nccl_coll(nc, AX_NCCL_SCATTER, 0, all, rs, n / P);
        ax_nccl_join(nc);
        be->copy(&head, rs, 4);
        CHECK(head == P * h[(size_t)g.rank * (n / P)], "reduce-scatter: %g", head);
        CHECK(ax_nccl_done(nc), "the stream's collectives are done once read back");
    }
    /* through comm.c (NCCL, or MPI on host buffers): the same calls as on the CPU, non-blocking, then ax_wait */
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000) + g.rank;
    be->copy(a, h, n * 4);
    ax_req q;
    ax_iallreduce_f32(&g.data, a, n, &q);
    ax_wait(&q);
    be->copy(h, a, n * 4);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(h[i] - ((double)P * (i % 1000) + (double)P * (P - 1) / 2)));
    CHECK(worst == 0, "ax_iallreduce_f32 on the device: max error %g", worst);
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000) + g.rank;
    be->copy(a, h, n * 4);
    ax_iallgather_f32(&g.data, a, all, n, &q);
    ax_wait(&q);
    for (int k = 0; k < P; k++) {
        float v0;
        be->copy(&v0, all + (size_t)k * n + 7, 4);
        CHECK(v0 == 7.0f + k, "ax_iallgather_f32: rank %d's block %g", k, v0);
    }
    ax_ireduce_scatter_f32(&g.data, all, rs, n, &q);
    while (!ax_test(&q)) {}
    float r0;
    be->copy(&r0, rs + 7, 4);
    CHECK(r0 == (float)P * (7 + g.rank), "ax_ireduce_scatter_f32: %g", r0);
    /* a ring's step (ax_isendrecv_f32): NCCL's send and receive in one group,
     * or staged through host buffers; rank r gets rank r-1's floats (one rank: a copy) */
    int src = (g.rank + P - 1) % P;
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000) + 1000.0f * g.rank;
    be->copy(a, h, n * 4);
    ax_isendrecv_f32(&g.data, a, (g.rank + 1) % P, rs, src, n / P, &q);
    ax_wait(&q);
    float got[2];
    be->copy(got, rs + 5, 4);
    be->copy(got + 1, rs + n / P - 1, 4);
    CHECK(got[0] == 5.0f + 1000.0f * src && got[1] == (float)((n / P - 1) % 1000) + 1000.0f * src,
          "ax_isendrecv_f32 from rank %d: %g, %g", src, got[0], got[1]);
    /* blocked time over data (comm.h): NCCL joins by events, staged ones by the
     * host clock; none counted in a group of one unless NCCL was called directly */
    double s = ax_comm_seconds(&g.data);
    CHECK(isfinite(s) && s >= 0 && s < 60 && (P == 1 || s > 0), "blocked seconds over data: %g", s);
    if (g.rank == 0) printf("blocked over data: %.3f ms (%s)\n", s * 1e3, nccl ? "NCCL, events" : "staged");
    ax_reducer r = ax_comm_reducer(&g.X);
    float v[4] = {1, 2, 3, 4};
    float *dv = be->alloc(sizeof v);
    be->copy(dv, v, sizeof v);
    r.sum(r.ctx, dv, 4);
    be->copy(v, dv, sizeof v);
    CHECK(v[3] == 4.0f * g.gx, "reducer over X: %g", v[3]);
    ax_comm sub;
    ax_comm_split(&g.data, 0, g.rank, &sub);
    CHECK(!sub.nccl == !g.data.nccl, "a group split from one with NCCL has NCCL, from one without none");
    ax_comm_free(&sub);
    ax_comm_split(&g.data, g.rank, 0, &sub);
    CHECK(!sub.nccl, "a group of one split from data has no NCCL communicator");
    ax_comm_free(&sub);
    ax_comm_free(&one);
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
