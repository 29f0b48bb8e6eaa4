/*
 * A stand-in verbs provider for VerbsInlineCallsTest, compiled against the installed <infiniband/verbs.h> at test
 * time. It lays out a verbs_context, ibv_cq and ibv_qp the way a provider does and fills the function tables that
 * verbs.h's static inline verbs call through (ops.post_send, ops.poll_cq, verbs_context.query_port), so the Java
 * bindings' pointer reads, argument passing and struct parsing run for real up to where hardware would start.
 * post_send records what it was given and queues one completion per request for poll_cq.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <string.h>

#define RING 1024
static struct ibv_wc ring[RING];
static unsigned head, tail;
static struct ibv_send_wr last_wr;
static struct ibv_sge last_sge;
static uint32_t last_qp_num;
static uint64_t last_port_len;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr) {
    if (wr->wr.rdma.rkey == 0x0000f011u) { /* "full": the provider refuses the post */
        *bad_wr = wr;
        return 12; /* ENOMEM */
    }
    last_wr = *wr;
    last_sge = wr->sg_list[0];
    last_qp_num = qp->qp_num;
    struct ibv_wc *wc = &ring[tail++ % RING];
    memset(wc, 0, sizeof *wc);
    wc->wr_id = wr->wr_id;
    wc->status = wr->wr.rdma.rkey == 0x0000deadu ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS;
    wc->vendor_err = wc->status == IBV_WC_SUCCESS ? 0 : 0x77;
    wc->opcode = wr->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
    wc->qp_num = qp->qp_num;
    wc->byte_len = wr->sg_list[0].length;
    return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc) {
    (void)cq;
    int n = 0;
    while (head != tail && n < num_entries) {
        wc[n++] = ring[head++ % RING];
    }
    return n;
}

static int fake_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
                           size_t len) {
    (void)context;
    last_port_len = len;
    if (len != sizeof *attr) {
        return 22; /* EINVAL */
    }
    memset(attr, 0, len);
    attr->state = port_num == 1 ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    attr->active_mtu = IBV_MTU_2048;
    attr->lid = (uint16_t)(0x1200 + port_num);
    attr->link_layer = IBV_LINK_LAYER_ETHERNET;
    attr->gid_tbl_len = 8;
    attr->max_msg_sz = 1u << 30;
    return 0;
}

static struct verbs_context vctx;
static struct ibv_cq cq;
static struct ibv_qp qp;

struct ibv_context *fake_setup(void) {
    memset(&vctx, 0, sizeof vctx);
    vctx.sz = sizeof vctx;
    vctx.query_port = fake_query_port;
    vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    vctx.context.ops.poll_cq = fake_poll_cq;
    vctx.context.ops.post_send = fake_post_send;
    memset(&cq, 0, sizeof cq);
    cq.context = &vctx.context;
    memset(&qp, 0, sizeof qp);
    qp.context = &vctx.context;
    qp.qp_num = 0xabc;
    head = tail = 0;
    return &vctx.context;
}

struct ibv_cq *fake_cq(void) { return &cq; }
struct ibv_qp *fake_qp(void) { return &qp; }

/* what the last accepted post_send carried */
uint64_t fake_last(int what) {
    switch (what) {
    case 0: return last_wr.wr_id;
    case 1: return (uint64_t)last_wr.opcode;
    case 2: return last_wr.send_flags;
    case 3: return (uint64_t)last_wr.num_sge;
    case 4: return (uint64_t)(uintptr_t)last_wr.next;
    case 5: return last_wr.wr.rdma.remote_addr;
    case 6: return last_wr.wr.rdma.rkey;
    case 7: return last_sge.addr;
    case 8: return last_sge.length;
    case 9: return last_sge.lkey;
    case 10: return last_qp_num;
    case 11: return last_port_len;
    default: return ~0ULL;
    }
}
