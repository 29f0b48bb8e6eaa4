package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.tent4j.transport.rdma.CLayouts.*;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.util.List;

/**
 * The libibverbs ABI this transport binds to: every struct layout, field offset and enum value in one place, written
 * by hand from rdma-core 44 {@code <infiniband/verbs.h>} for LP64 Linux (x86-64, aarch64). {@code VerbsAbiTest}
 * compiles an {@code offsetof}/{@code sizeof} program against the installed header at test time and compares every
 * named field and every {@code IBV_*} constant below, so a header that moved a field fails that test instead of
 * corrupting memory.
 *
 * <p>Layouts are built with {@link CLayouts#struct} which inserts C's natural-alignment padding, so the member lists read
 * like the header. Field names are the C names; anonymous C unions are unnamed union layouts, so a field inside one
 * is addressed as C addresses it ({@code ibv_send_wr.imm_data}).
 *
 * <p>The data path is {@code static inline} in verbs.h: {@code ibv_post_send} is
 * {@code qp->context->ops.post_send(...)} and {@code ibv_poll_cq} is {@code cq->context->ops.poll_cq(...)}, and
 * {@code ibv_query_port} prefers {@code verbs_context.query_port}. The {@code IBV_CONTEXT_OPS_*} and
 * {@code VERBS_CONTEXT_*} offsets below are what {@link VerbsLibrary} reads those function pointers from. How verbs
 * values read as text (status names, MTUs, GIDs) is {@link VerbsValues}.
 */
final class Verbs {
    private Verbs() {
    }

    // ---- enum ibv_port_state -----------------------------------------------------------------------------------
    static final int IBV_PORT_NOP = 0;
    static final int IBV_PORT_DOWN = 1;
    static final int IBV_PORT_INIT = 2;
    static final int IBV_PORT_ARMED = 3;
    static final int IBV_PORT_ACTIVE = 4;
    static final int IBV_PORT_ACTIVE_DEFER = 5;

    // ---- enum ibv_mtu --------------------------------------------------------------------------------------------
    static final int IBV_MTU_256 = 1;
    static final int IBV_MTU_512 = 2;
    static final int IBV_MTU_1024 = 3;
    static final int IBV_MTU_2048 = 4;
    static final int IBV_MTU_4096 = 5;

    // ---- link layer (ibv_port_attr.link_layer) ---------------------------------------------------------------------
    static final int IBV_LINK_LAYER_UNSPECIFIED = 0;
    static final int IBV_LINK_LAYER_INFINIBAND = 1;
    static final int IBV_LINK_LAYER_ETHERNET = 2;

    // ---- enum ibv_gid_type -----------------------------------------------------------------------------------------
    static final int IBV_GID_TYPE_IB = 0;
    static final int IBV_GID_TYPE_ROCE_V1 = 1;
    static final int IBV_GID_TYPE_ROCE_V2 = 2;

    // ---- enum ibv_qp_type ------------------------------------------------------------------------------------------
    static final int IBV_QPT_RC = 2;

    // ---- enum ibv_qp_state -----------------------------------------------------------------------------------------
    static final int IBV_QPS_RESET = 0;
    static final int IBV_QPS_INIT = 1;
    static final int IBV_QPS_RTR = 2;
    static final int IBV_QPS_RTS = 3;
    static final int IBV_QPS_SQD = 4;
    static final int IBV_QPS_SQE = 5;
    static final int IBV_QPS_ERR = 6;
    static final int IBV_QPS_UNKNOWN = 7;

    // ---- enum ibv_access_flags -------------------------------------------------------------------------------------
    static final int IBV_ACCESS_LOCAL_WRITE = 1;
    static final int IBV_ACCESS_REMOTE_WRITE = 1 << 1;
    static final int IBV_ACCESS_REMOTE_READ = 1 << 2;
    static final int IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;
    static final int IBV_ACCESS_RELAXED_ORDERING = 1 << 20;

    // ---- enum ibv_wr_opcode ----------------------------------------------------------------------------------------
    static final int IBV_WR_RDMA_WRITE = 0;
    static final int IBV_WR_RDMA_WRITE_WITH_IMM = 1;
    static final int IBV_WR_SEND = 2;
    static final int IBV_WR_RDMA_READ = 4;

    // ---- enum ibv_send_flags ---------------------------------------------------------------------------------------
    static final int IBV_SEND_FENCE = 1;
    static final int IBV_SEND_SIGNALED = 1 << 1;
    static final int IBV_SEND_INLINE = 1 << 3;

    // ---- enum ibv_wc_status (names in WC_STATUS_NAMES, indexed by value) ------------------------------------------
    static final int IBV_WC_SUCCESS = 0;
    static final int IBV_WC_LOC_LEN_ERR = 1;
    static final int IBV_WC_LOC_QP_OP_ERR = 2;
    static final int IBV_WC_LOC_EEC_OP_ERR = 3;
    static final int IBV_WC_LOC_PROT_ERR = 4;
    static final int IBV_WC_WR_FLUSH_ERR = 5;
    static final int IBV_WC_MW_BIND_ERR = 6;
    static final int IBV_WC_BAD_RESP_ERR = 7;
    static final int IBV_WC_LOC_ACCESS_ERR = 8;
    static final int IBV_WC_REM_INV_REQ_ERR = 9;
    static final int IBV_WC_REM_ACCESS_ERR = 10;
    static final int IBV_WC_REM_OP_ERR = 11;
    static final int IBV_WC_RETRY_EXC_ERR = 12;
    static final int IBV_WC_RNR_RETRY_EXC_ERR = 13;
    static final int IBV_WC_LOC_RDD_VIOL_ERR = 14;
    static final int IBV_WC_REM_INV_RD_REQ_ERR = 15;
    static final int IBV_WC_REM_ABORT_ERR = 16;
    static final int IBV_WC_INV_EECN_ERR = 17;
    static final int IBV_WC_INV_EEC_STATE_ERR = 18;
    static final int IBV_WC_FATAL_ERR = 19;
    static final int IBV_WC_RESP_TIMEOUT_ERR = 20;
    static final int IBV_WC_GENERAL_ERR = 21;
    static final int IBV_WC_TM_ERR = 22;
    static final int IBV_WC_TM_RNDV_INCOMPLETE = 23;

    static final List<String> WC_STATUS_NAMES = List.of("IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR",
            "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR",
            "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR",
            "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR",
            "IBV_WC_LOC_RDD_VIOL_ERR", "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
            "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",
            "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE");

    // ---- enum ibv_qp_attr_mask -------------------------------------------------------------------------------------
    static final int IBV_QP_STATE = 1;
    static final int IBV_QP_CUR_STATE = 1 << 1;
    static final int IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
    static final int IBV_QP_ACCESS_FLAGS = 1 << 3;
    static final int IBV_QP_PKEY_INDEX = 1 << 4;
    static final int IBV_QP_PORT = 1 << 5;
    static final int IBV_QP_QKEY = 1 << 6;
    static final int IBV_QP_AV = 1 << 7;
    static final int IBV_QP_PATH_MTU = 1 << 8;
    static final int IBV_QP_TIMEOUT = 1 << 9;
    static final int IBV_QP_RETRY_CNT = 1 << 10;
    static final int IBV_QP_RNR_RETRY = 1 << 11;
    static final int IBV_QP_RQ_PSN = 1 << 12;
    static final int IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
    static final int IBV_QP_ALT_PATH = 1 << 14;
    static final int IBV_QP_MIN_RNR_TIMER = 1 << 15;
    static final int IBV_QP_SQ_PSN = 1 << 16;
    static final int IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    static final int IBV_QP_PATH_MIG_STATE = 1 << 18;
    static final int IBV_QP_CAP = 1 << 19;
    static final int IBV_QP_DEST_QPN = 1 << 20;

    // ---- pthread types embedded in ibv_context / ibv_cq / ibv_qp (glibc LP64) -------------------------------------
    /** {@code sizeof(pthread_mutex_t)}: 40 on x86-64, 48 on aarch64 (glibc's generic layout). */
    static final int PTHREAD_MUTEX_SIZE = isAarch64() ? 48 : 40;
    static final int PTHREAD_COND_SIZE = 48;

    // ---- struct layouts ------------------------------------------------------------------------------------------

    static final UnionLayout IBV_GID = union("ibv_gid", MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("raw"),
            struct("global", u64("subnet_prefix"), u64("interface_id")));

    static final StructLayout IBV_GID_ENTRY = struct("ibv_gid_entry", IBV_GID.withName("gid"), u32("gid_index"),
            u32("port_num"), u32("gid_type"), u32("ndev_ifindex"));

    static final StructLayout IBV_DEVICE_ATTR = struct("ibv_device_attr",
            MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("fw_ver"), u64("node_guid"), u64("sys_image_guid"),
            u64("max_mr_size"), u64("page_size_cap"), u32("vendor_id"), u32("vendor_part_id"), u32("hw_ver"),
            u32("max_qp"), u32("max_qp_wr"), u32("device_cap_flags"), u32("max_sge"), u32("max_sge_rd"),
            u32("max_cq"), u32("max_cqe"), u32("max_mr"), u32("max_pd"), u32("max_qp_rd_atom"),
            u32("max_ee_rd_atom"), u32("max_res_rd_atom"), u32("max_qp_init_rd_atom"), u32("max_ee_init_rd_atom"),
            u32("atomic_cap"), u32("max_ee"), u32("max_rdd"), u32("max_mw"), u32("max_raw_ipv6_qp"),
            u32("max_raw_ethy_qp"), u32("max_mcast_grp"), u32("max_mcast_qp_attach"),
            u32("max_total_mcast_qp_attach"), u32("max_ah"), u32("max_fmr"), u32("max_map_per_fmr"), u32("max_srq"),
            u32("max_srq_wr"), u32("max_srq_sge"), u16("max_pkeys"), u8("local_ca_ack_delay"), u8("phys_port_cnt"));

    static final StructLayout IBV_PORT_ATTR = struct("ibv_port_attr", u32("state"), u32("max_mtu"),
            u32("active_mtu"), u32("gid_tbl_len"), u32("port_cap_flags"), u32("max_msg_sz"), u32("bad_pkey_cntr"),
            u32("qkey_viol_cntr"), u16("pkey_tbl_len"), u16("lid"), u16("sm_lid"), u8("lmc"), u8("max_vl_num"),
            u8("sm_sl"), u8("subnet_timeout"), u8("init_type_reply"), u8("active_width"), u8("active_speed"),
            u8("phys_state"), u8("link_layer"), u8("flags"), u16("port_cap_flags2"));

    static final StructLayout IBV_QP_CAP_LAYOUT = struct("ibv_qp_cap", u32("max_send_wr"), u32("max_recv_wr"),
            u32("max_send_sge"), u32("max_recv_sge"), u32("max_inline_data"));

    static final StructLayout IBV_QP_INIT_ATTR = struct("ibv_qp_init_attr", ptr("qp_context"), ptr("send_cq"),
            ptr("recv_cq"), ptr("srq"), IBV_QP_CAP_LAYOUT.withName("cap"), u32("qp_type"), u32("sq_sig_all"));

    static final StructLayout IBV_GLOBAL_ROUTE = struct("ibv_global_route", IBV_GID.withName("dgid"),
            u32("flow_label"), u8("sgid_index"), u8("hop_limit"), u8("traffic_class"));

    static final StructLayout IBV_AH_ATTR = struct("ibv_ah_attr", IBV_GLOBAL_ROUTE.withName("grh"), u16("dlid"),
            u8("sl"), u8("src_path_bits"), u8("static_rate"), u8("is_global"), u8("port_num"));

    static final StructLayout IBV_QP_ATTR = struct("ibv_qp_attr", u32("qp_state"), u32("cur_qp_state"),
            u32("path_mtu"), u32("path_mig_state"), u32("qkey"), u32("rq_psn"), u32("sq_psn"), u32("dest_qp_num"),
            u32("qp_access_flags"), IBV_QP_CAP_LAYOUT.withName("cap"), IBV_AH_ATTR.withName("ah_attr"),
            IBV_AH_ATTR.withName("alt_ah_attr"), u16("pkey_index"), u16("alt_pkey_index"),
            u8("en_sqd_async_notify"), u8("sq_draining"), u8("max_rd_atomic"), u8("max_dest_rd_atomic"),
            u8("min_rnr_timer"), u8("port_num"), u8("timeout"), u8("retry_cnt"), u8("rnr_retry"),
            u8("alt_port_num"), u8("alt_timeout"), u32("rate_limit"));

    static final StructLayout IBV_SGE = struct("ibv_sge", u64("addr"), u32("length"), u32("lkey"));

    static final StructLayout IBV_MW_BIND_INFO = struct("ibv_mw_bind_info", ptr("mr"), u64("addr"), u64("length"),
            u32("mw_access_flags"));

    static final StructLayout IBV_SEND_WR = struct("ibv_send_wr", u64("wr_id"), ptr("next"), ptr("sg_list"),
            u32("num_sge"), u32("opcode"), u32("send_flags"),
            union(null, u32("imm_data"), u32("invalidate_rkey")),
            union("wr",
                    struct("rdma", u64("remote_addr"), u32("rkey")),
                    struct("atomic", u64("remote_addr"), u64("compare_add"), u64("swap"), u32("rkey")),
                    struct("ud", ptr("ah"), u32("remote_qpn"), u32("remote_qkey"))),
            union("qp_type", struct("xrc", u32("remote_srqn"))),
            union(null,
                    struct("bind_mw", ptr("mw"), u32("rkey"), IBV_MW_BIND_INFO.withName("bind_info")),
                    struct("tso", ptr("hdr"), u16("hdr_sz"), u16("mss"))));

    static final StructLayout IBV_WC = struct("ibv_wc", u64("wr_id"), u32("status"), u32("opcode"),
            u32("vendor_err"), u32("byte_len"), union(null, u32("imm_data"), u32("invalidated_rkey")), u32("qp_num"),
            u32("src_qp"), u32("wc_flags"), u16("pkey_index"), u16("slid"), u8("sl"), u8("dlid_path_bits"));

    static final StructLayout IBV_MR = struct("ibv_mr", ptr("context"), ptr("pd"), ptr("addr"), u64("length"),
            u32("handle"), u32("lkey"), u32("rkey"));

    static final StructLayout IBV_PD = struct("ibv_pd", ptr("context"), u32("handle"));

    static final StructLayout IBV_CQ = struct("ibv_cq", ptr("context"), ptr("channel"), ptr("cq_context"),
            u32("handle"), u32("cqe"), pthread("mutex", PTHREAD_MUTEX_SIZE), pthread("cond", PTHREAD_COND_SIZE),
            u32("comp_events_completed"), u32("async_events_completed"));

    static final StructLayout IBV_QP = struct("ibv_qp", ptr("context"), ptr("qp_context"), ptr("pd"), ptr("send_cq"),
            ptr("recv_cq"), ptr("srq"), u32("handle"), u32("qp_num"), u32("state"), u32("qp_type"),
            pthread("mutex", PTHREAD_MUTEX_SIZE), pthread("cond", PTHREAD_COND_SIZE), u32("events_completed"));

    static final StructLayout IBV_CONTEXT_OPS = struct("ibv_context_ops", ptr("_compat_query_device"),
            ptr("_compat_query_port"), ptr("_compat_alloc_pd"), ptr("_compat_dealloc_pd"), ptr("_compat_reg_mr"),
            ptr("_compat_rereg_mr"), ptr("_compat_dereg_mr"), ptr("alloc_mw"), ptr("bind_mw"), ptr("dealloc_mw"),
            ptr("_compat_create_cq"), ptr("poll_cq"), ptr("req_notify_cq"), ptr("_compat_cq_event"),
            ptr("_compat_resize_cq"), ptr("_compat_destroy_cq"), ptr("_compat_create_srq"),
            ptr("_compat_modify_srq"), ptr("_compat_query_srq"), ptr("_compat_destroy_srq"), ptr("post_srq_recv"),
            ptr("_compat_create_qp"), ptr("_compat_query_qp"), ptr("_compat_modify_qp"), ptr("_compat_destroy_qp"),
            ptr("post_send"), ptr("post_recv"), ptr("_compat_create_ah"), ptr("_compat_destroy_ah"),
            ptr("_compat_attach_mcast"), ptr("_compat_detach_mcast"), ptr("_compat_async_event"));

    static final StructLayout IBV_CONTEXT = struct("ibv_context", ptr("device"), IBV_CONTEXT_OPS.withName("ops"),
            u32("cmd_fd"), u32("async_fd"), u32("num_comp_vectors"), pthread("mutex", PTHREAD_MUTEX_SIZE),
            ptr("abi_compat"));

    /**
     * The tail of {@code struct verbs_context} that this transport reads: it "grows up", so new members are added
     * before {@code query_port} and the offsets counted back from {@code context} stay fixed. The members between
     * {@code query_port} and {@code sz} are opaque here.
     */
    static final StructLayout VERBS_CONTEXT = struct("verbs_context", ptr("query_port"),
            MemoryLayout.sequenceLayout(38, ADDRESS).withName("(opaque ops)"), u64("sz"),
            IBV_CONTEXT.withName("context"));

    // ---- offsets the bindings use --------------------------------------------------------------------------------

    static final long GID_ENTRY_GID = off(IBV_GID_ENTRY, "gid");
    static final long GID_ENTRY_GID_TYPE = off(IBV_GID_ENTRY, "gid_type");

    static final long DEVICE_ATTR_MAX_MR_SIZE = off(IBV_DEVICE_ATTR, "max_mr_size");
    static final long DEVICE_ATTR_MAX_QP_WR = off(IBV_DEVICE_ATTR, "max_qp_wr");
    static final long DEVICE_ATTR_MAX_SGE = off(IBV_DEVICE_ATTR, "max_sge");
    static final long DEVICE_ATTR_MAX_CQE = off(IBV_DEVICE_ATTR, "max_cqe");
    static final long DEVICE_ATTR_MAX_QP_RD_ATOM = off(IBV_DEVICE_ATTR, "max_qp_rd_atom");
    static final long DEVICE_ATTR_MAX_QP_INIT_RD_ATOM = off(IBV_DEVICE_ATTR, "max_qp_init_rd_atom");
    static final long DEVICE_ATTR_PHYS_PORT_CNT = off(IBV_DEVICE_ATTR, "phys_port_cnt");

    static final long PORT_ATTR_STATE = off(IBV_PORT_ATTR, "state");
    static final long PORT_ATTR_ACTIVE_MTU = off(IBV_PORT_ATTR, "active_mtu");
    static final long PORT_ATTR_GID_TBL_LEN = off(IBV_PORT_ATTR, "gid_tbl_len");
    static final long PORT_ATTR_MAX_MSG_SZ = off(IBV_PORT_ATTR, "max_msg_sz");
    static final long PORT_ATTR_LID = off(IBV_PORT_ATTR, "lid");
    static final long PORT_ATTR_LINK_LAYER = off(IBV_PORT_ATTR, "link_layer");

    static final long QP_INIT_ATTR_SEND_CQ = off(IBV_QP_INIT_ATTR, "send_cq");
    static final long QP_INIT_ATTR_RECV_CQ = off(IBV_QP_INIT_ATTR, "recv_cq");
    static final long QP_INIT_ATTR_MAX_SEND_WR = off(IBV_QP_INIT_ATTR, "cap", "max_send_wr");
    static final long QP_INIT_ATTR_MAX_RECV_WR = off(IBV_QP_INIT_ATTR, "cap", "max_recv_wr");
    static final long QP_INIT_ATTR_MAX_SEND_SGE = off(IBV_QP_INIT_ATTR, "cap", "max_send_sge");
    static final long QP_INIT_ATTR_MAX_RECV_SGE = off(IBV_QP_INIT_ATTR, "cap", "max_recv_sge");
    static final long QP_INIT_ATTR_QP_TYPE = off(IBV_QP_INIT_ATTR, "qp_type");
    static final long QP_INIT_ATTR_SQ_SIG_ALL = off(IBV_QP_INIT_ATTR, "sq_sig_all");

    static final long QP_ATTR_QP_STATE = off(IBV_QP_ATTR, "qp_state");
    static final long QP_ATTR_PATH_MTU = off(IBV_QP_ATTR, "path_mtu");
    static final long QP_ATTR_RQ_PSN = off(IBV_QP_ATTR, "rq_psn");
    static final long QP_ATTR_SQ_PSN = off(IBV_QP_ATTR, "sq_psn");
    static final long QP_ATTR_DEST_QP_NUM = off(IBV_QP_ATTR, "dest_qp_num");
    static final long QP_ATTR_QP_ACCESS_FLAGS = off(IBV_QP_ATTR, "qp_access_flags");
    static final long QP_ATTR_AH_DGID = off(IBV_QP_ATTR, "ah_attr", "grh", "dgid");
    static final long QP_ATTR_AH_FLOW_LABEL = off(IBV_QP_ATTR, "ah_attr", "grh", "flow_label");
    static final long QP_ATTR_AH_SGID_INDEX = off(IBV_QP_ATTR, "ah_attr", "grh", "sgid_index");
    static final long QP_ATTR_AH_HOP_LIMIT = off(IBV_QP_ATTR, "ah_attr", "grh", "hop_limit");
    static final long QP_ATTR_AH_TRAFFIC_CLASS = off(IBV_QP_ATTR, "ah_attr", "grh", "traffic_class");
    static final long QP_ATTR_AH_DLID = off(IBV_QP_ATTR, "ah_attr", "dlid");
    static final long QP_ATTR_AH_SL = off(IBV_QP_ATTR, "ah_attr", "sl");
    static final long QP_ATTR_AH_SRC_PATH_BITS = off(IBV_QP_ATTR, "ah_attr", "src_path_bits");
    static final long QP_ATTR_AH_STATIC_RATE = off(IBV_QP_ATTR, "ah_attr", "static_rate");
    static final long QP_ATTR_AH_IS_GLOBAL = off(IBV_QP_ATTR, "ah_attr", "is_global");
    static final long QP_ATTR_AH_PORT_NUM = off(IBV_QP_ATTR, "ah_attr", "port_num");
    static final long QP_ATTR_PKEY_INDEX = off(IBV_QP_ATTR, "pkey_index");
    static final long QP_ATTR_MAX_RD_ATOMIC = off(IBV_QP_ATTR, "max_rd_atomic");
    static final long QP_ATTR_MAX_DEST_RD_ATOMIC = off(IBV_QP_ATTR, "max_dest_rd_atomic");
    static final long QP_ATTR_MIN_RNR_TIMER = off(IBV_QP_ATTR, "min_rnr_timer");
    static final long QP_ATTR_PORT_NUM = off(IBV_QP_ATTR, "port_num");
    static final long QP_ATTR_TIMEOUT = off(IBV_QP_ATTR, "timeout");
    static final long QP_ATTR_RETRY_CNT = off(IBV_QP_ATTR, "retry_cnt");
    static final long QP_ATTR_RNR_RETRY = off(IBV_QP_ATTR, "rnr_retry");

    static final long SGE_ADDR = off(IBV_SGE, "addr");
    static final long SGE_LENGTH = off(IBV_SGE, "length");
    static final long SGE_LKEY = off(IBV_SGE, "lkey");

    static final long SEND_WR_WR_ID = off(IBV_SEND_WR, "wr_id");
    static final long SEND_WR_NEXT = off(IBV_SEND_WR, "next");
    static final long SEND_WR_SG_LIST = off(IBV_SEND_WR, "sg_list");
    static final long SEND_WR_NUM_SGE = off(IBV_SEND_WR, "num_sge");
    static final long SEND_WR_OPCODE = off(IBV_SEND_WR, "opcode");
    static final long SEND_WR_SEND_FLAGS = off(IBV_SEND_WR, "send_flags");
    static final long SEND_WR_RDMA_REMOTE_ADDR = off(IBV_SEND_WR, "wr", "rdma", "remote_addr");
    static final long SEND_WR_RDMA_RKEY = off(IBV_SEND_WR, "wr", "rdma", "rkey");

    static final long WC_WR_ID = off(IBV_WC, "wr_id");
    static final long WC_STATUS = off(IBV_WC, "status");
    static final long WC_OPCODE = off(IBV_WC, "opcode");
    static final long WC_VENDOR_ERR = off(IBV_WC, "vendor_err");
    static final long WC_QP_NUM = off(IBV_WC, "qp_num");

    static final long MR_LKEY = off(IBV_MR, "lkey");
    static final long MR_RKEY = off(IBV_MR, "rkey");

    static final long QP_CONTEXT = off(IBV_QP, "context");
    static final long QP_QP_NUM = off(IBV_QP, "qp_num");
    static final long CQ_CONTEXT = off(IBV_CQ, "context");

    static final long CONTEXT_OPS_POLL_CQ = off(IBV_CONTEXT, "ops", "poll_cq");
    static final long CONTEXT_OPS_POST_SEND = off(IBV_CONTEXT, "ops", "post_send");
    static final long CONTEXT_ABI_COMPAT = off(IBV_CONTEXT, "abi_compat");

    /** {@code offsetof(struct verbs_context, context)}: the ibv_context sits at the end of its verbs_context. */
    static final long VERBS_CONTEXT_CONTEXT = off(VERBS_CONTEXT, "context");
    static final long VERBS_CONTEXT_SZ = off(VERBS_CONTEXT, "sz");
    static final long VERBS_CONTEXT_QUERY_PORT = off(VERBS_CONTEXT, "query_port");
    /**
     * {@code sizeof(struct verbs_context) - offsetof(struct verbs_context, query_port)}: a provider whose
     * {@code sz} is smaller than this predates {@code query_port} (verbs.h's {@code verbs_get_ctx_op}).
     */
    static final long VERBS_CONTEXT_SIZE_FROM_QUERY_PORT = VERBS_CONTEXT.byteSize() - VERBS_CONTEXT_QUERY_PORT;
    /** {@code __VERBS_ABI_IS_EXTENDED}: {@code abi_compat} holds this when the context is a verbs_context. */
    static final long VERBS_ABI_IS_EXTENDED = -1L;

    /** Every layout above with the C type it mirrors, for {@code VerbsAbiTest}. */
    static List<AbiType> abiTypes() {
        return List.of(new AbiType("union ibv_gid", IBV_GID, null),
                new AbiType("struct ibv_gid_entry", IBV_GID_ENTRY, null),
                new AbiType("struct ibv_device_attr", IBV_DEVICE_ATTR, null),
                new AbiType("struct ibv_port_attr", IBV_PORT_ATTR, null),
                new AbiType("struct ibv_qp_cap", IBV_QP_CAP_LAYOUT, null),
                new AbiType("struct ibv_qp_init_attr", IBV_QP_INIT_ATTR, null),
                new AbiType("struct ibv_global_route", IBV_GLOBAL_ROUTE, null),
                new AbiType("struct ibv_ah_attr", IBV_AH_ATTR, null),
                new AbiType("struct ibv_qp_attr", IBV_QP_ATTR, null),
                new AbiType("struct ibv_sge", IBV_SGE, null),
                new AbiType("struct ibv_mw_bind_info", IBV_MW_BIND_INFO, null),
                new AbiType("struct ibv_send_wr", IBV_SEND_WR, null),
                new AbiType("struct ibv_wc", IBV_WC, null),
                new AbiType("struct ibv_mr", IBV_MR, null),
                new AbiType("struct ibv_pd", IBV_PD, null),
                new AbiType("struct ibv_cq", IBV_CQ, null),
                new AbiType("struct ibv_qp", IBV_QP, null),
                new AbiType("struct ibv_context_ops", IBV_CONTEXT_OPS, null),
                new AbiType("struct ibv_context", IBV_CONTEXT, null),
                // only the tail from query_port is modelled and the struct grows at its head, so offsets are
                // compared counted back from 'context'
                new AbiType("struct verbs_context", VERBS_CONTEXT, "context"));
    }

    /**
     * A layout and the C type it mirrors.
     *
     * @param anchor {@code null} when offsets and {@code sizeof} compare as they are; otherwise the field that offsets
     *               are counted from (and {@code sizeof} is not compared), for a struct modelled only in part
     */
    record AbiType(String cType, GroupLayout layout, String anchor) {
    }
}
