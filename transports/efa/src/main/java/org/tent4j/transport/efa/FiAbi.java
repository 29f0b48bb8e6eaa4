package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The libfabric ABI this transport binds to: every struct layout, offset and constant in one place, written by hand
 * from the libfabric 1.17 headers ({@code /usr/include/rdma/fabric.h}, {@code fi_domain.h}, {@code fi_endpoint.h},
 * {@code fi_eq.h}, {@code fi_cm.h}, {@code fi_rma.h}) for LP64 (x86-64, aarch64). {@code FiAbiTest} compiles an
 * {@code offsetof} program against the installed headers and compares it with these layouts, so a newer libfabric
 * that moved a field fails that test instead of corrupting memory.
 *
 * <p>Most of libfabric's API is {@code static inline} functions that call through ops tables; the {@code *_OPS_*}
 * offsets below are the slots of those tables. Newer libfabric releases only append slots, and {@link LibFabric}
 * checks each table's leading {@code size} field before calling a slot.
 */
final class FiAbi {
    private FiAbi() {
    }

    // ---- struct layouts ------------------------------------------------------------------------------------------

    static final StructLayout FID = struct("fid", u64("fclass"), ptr("context"), ptr("ops"));

    static final StructLayout FI_INFO = struct("fi_info", ptr("next"), u64("caps"), u64("mode"), u32("addr_format"),
            u64("src_addrlen"), u64("dest_addrlen"), ptr("src_addr"), ptr("dest_addr"), ptr("handle"), ptr("tx_attr"),
            ptr("rx_attr"), ptr("ep_attr"), ptr("domain_attr"), ptr("fabric_attr"), ptr("nic"));

    static final StructLayout FI_TX_ATTR = struct("fi_tx_attr", u64("caps"), u64("mode"), u64("op_flags"),
            u64("msg_order"), u64("comp_order"), u64("inject_size"), u64("size"), u64("iov_limit"),
            u64("rma_iov_limit"), u32("tclass"));

    static final StructLayout FI_EP_ATTR = struct("fi_ep_attr", u32("type"), u32("protocol"),
            u32("protocol_version"), u64("max_msg_size"), u64("msg_prefix_size"), u64("max_order_raw_size"),
            u64("max_order_war_size"), u64("max_order_waw_size"), u64("mem_tag_format"), u64("tx_ctx_cnt"),
            u64("rx_ctx_cnt"), u64("auth_key_size"), ptr("auth_key"));

    static final StructLayout FI_DOMAIN_ATTR = struct("fi_domain_attr", ptr("domain"), ptr("name"), u32("threading"),
            u32("control_progress"), u32("data_progress"), u32("resource_mgmt"), u32("av_type"), u32("mr_mode"),
            u64("mr_key_size"), u64("cq_data_size"), u64("cq_cnt"), u64("ep_cnt"), u64("tx_ctx_cnt"),
            u64("rx_ctx_cnt"), u64("max_ep_tx_ctx"), u64("max_ep_rx_ctx"), u64("max_ep_stx_ctx"),
            u64("max_ep_srx_ctx"), u64("cntr_cnt"), u64("mr_iov_limit"), u64("caps"), u64("mode"), ptr("auth_key"),
            u64("auth_key_size"), u64("max_err_data"), u64("mr_cnt"), u32("tclass"));

    static final StructLayout FI_FABRIC_ATTR = struct("fi_fabric_attr", ptr("fabric"), ptr("name"), ptr("prov_name"),
            u32("prov_version"), u32("api_version"));

    static final StructLayout FI_OPS = struct("fi_ops", u64("size"), ptr("close"), ptr("bind"), ptr("control"),
            ptr("ops_open"), ptr("tostr"), ptr("ops_set"));

    static final StructLayout FID_FABRIC = struct("fid_fabric", FID.withName("fid"), ptr("ops"), u32("api_version"));

    static final StructLayout FI_OPS_FABRIC = struct("fi_ops_fabric", u64("size"), ptr("domain"), ptr("passive_ep"),
            ptr("eq_open"), ptr("wait_open"), ptr("trywait"), ptr("domain2"));

    static final StructLayout FID_DOMAIN = struct("fid_domain", FID.withName("fid"), ptr("ops"), ptr("mr"));

    static final StructLayout FI_OPS_DOMAIN = struct("fi_ops_domain", u64("size"), ptr("av_open"), ptr("cq_open"),
            ptr("endpoint"), ptr("scalable_ep"), ptr("cntr_open"), ptr("poll_open"), ptr("stx_ctx"), ptr("srx_ctx"),
            ptr("query_atomic"), ptr("query_collective"), ptr("endpoint2"));

    static final StructLayout FI_OPS_MR = struct("fi_ops_mr", u64("size"), ptr("reg"), ptr("regv"), ptr("regattr"));

    static final StructLayout FID_MR = struct("fid_mr", FID.withName("fid"), ptr("mem_desc"), u64("key"));

    static final StructLayout FID_EP = struct("fid_ep", FID.withName("fid"), ptr("ops"), ptr("cm"), ptr("msg"),
            ptr("rma"), ptr("tagged"), ptr("atomic"), ptr("collective"));

    static final StructLayout FI_OPS_EP = struct("fi_ops_ep", u64("size"), ptr("cancel"), ptr("getopt"),
            ptr("setopt"), ptr("tx_ctx"), ptr("rx_ctx"), ptr("rx_size_left"), ptr("tx_size_left"));

    static final StructLayout FI_OPS_CM = struct("fi_ops_cm", u64("size"), ptr("setname"), ptr("getname"),
            ptr("getpeer"), ptr("connect"), ptr("listen"), ptr("accept"), ptr("reject"), ptr("shutdown"), ptr("join"));

    static final StructLayout FI_OPS_RMA = struct("fi_ops_rma", u64("size"), ptr("read"), ptr("readv"),
            ptr("readmsg"), ptr("write"), ptr("writev"), ptr("writemsg"), ptr("inject"), ptr("writedata"),
            ptr("injectdata"));

    static final StructLayout FID_AV = struct("fid_av", FID.withName("fid"), ptr("ops"));

    static final StructLayout FI_OPS_AV = struct("fi_ops_av", u64("size"), ptr("insert"), ptr("insertsvc"),
            ptr("insertsym"), ptr("remove"), ptr("lookup"), ptr("straddr"), ptr("av_set"));

    static final StructLayout FI_AV_ATTR = struct("fi_av_attr", u32("type"), u32("rx_ctx_bits"), u64("count"),
            u64("ep_per_node"), ptr("name"), ptr("map_addr"), u64("flags"));

    static final StructLayout FID_CQ = struct("fid_cq", FID.withName("fid"), ptr("ops"));

    static final StructLayout FI_OPS_CQ = struct("fi_ops_cq", u64("size"), ptr("read"), ptr("readfrom"),
            ptr("readerr"), ptr("sread"), ptr("sreadfrom"), ptr("signal"), ptr("strerror"));

    static final StructLayout FI_CQ_ATTR = struct("fi_cq_attr", u64("size"), u64("flags"), u32("format"),
            u32("wait_obj"), u32("signaling_vector"), u32("wait_cond"), ptr("wait_set"));

    static final StructLayout FI_CQ_DATA_ENTRY = struct("fi_cq_data_entry", ptr("op_context"), u64("flags"),
            u64("len"), ptr("buf"), u64("data"));

    static final StructLayout FI_CQ_ERR_ENTRY = struct("fi_cq_err_entry", ptr("op_context"), u64("flags"), u64("len"),
            ptr("buf"), u64("data"), u64("tag"), u64("olen"), u32("err"), u32("prov_errno"), ptr("err_data"),
            u64("err_data_size"));

    /** What a provider may use per operation when it asks for {@code FI_CONTEXT} / {@code FI_CONTEXT2}. */
    static final StructLayout FI_CONTEXT2_LAYOUT = struct("fi_context2", MemoryLayout.sequenceLayout(8, ADDRESS)
            .withName("internal"));

    /** Every layout above, for the header check. */
    static final List<StructLayout> ALL = List.of(FID, FI_INFO, FI_TX_ATTR, FI_EP_ATTR, FI_DOMAIN_ATTR,
            FI_FABRIC_ATTR, FI_OPS, FID_FABRIC, FI_OPS_FABRIC, FID_DOMAIN, FI_OPS_DOMAIN, FI_OPS_MR, FID_MR, FID_EP,
            FI_OPS_EP, FI_OPS_CM, FI_OPS_RMA, FID_AV, FI_OPS_AV, FI_AV_ATTR, FID_CQ, FI_OPS_CQ, FI_CQ_ATTR,
            FI_CQ_DATA_ENTRY, FI_CQ_ERR_ENTRY, FI_CONTEXT2_LAYOUT);


    // ---- offsets used by the bindings ----------------------------------------------------------------------------

    static final long INFO_CAPS = off(FI_INFO, "caps");
    static final long INFO_MODE = off(FI_INFO, "mode");
    static final long INFO_TX_ATTR = off(FI_INFO, "tx_attr");
    static final long INFO_EP_ATTR = off(FI_INFO, "ep_attr");
    static final long INFO_DOMAIN_ATTR = off(FI_INFO, "domain_attr");
    static final long INFO_FABRIC_ATTR = off(FI_INFO, "fabric_attr");
    static final long INFO_NEXT = off(FI_INFO, "next");

    static final long TX_OP_FLAGS = off(FI_TX_ATTR, "op_flags");
    static final long TX_SIZE = off(FI_TX_ATTR, "size");
    static final long EP_TYPE = off(FI_EP_ATTR, "type");
    static final long EP_MAX_MSG_SIZE = off(FI_EP_ATTR, "max_msg_size");
    static final long DOMAIN_NAME = off(FI_DOMAIN_ATTR, "name");
    static final long DOMAIN_THREADING = off(FI_DOMAIN_ATTR, "threading");
    static final long DOMAIN_DATA_PROGRESS = off(FI_DOMAIN_ATTR, "data_progress");
    static final long DOMAIN_AV_TYPE = off(FI_DOMAIN_ATTR, "av_type");
    static final long DOMAIN_MR_MODE = off(FI_DOMAIN_ATTR, "mr_mode");
    static final long DOMAIN_MR_KEY_SIZE = off(FI_DOMAIN_ATTR, "mr_key_size");
    static final long FABRIC_NAME = off(FI_FABRIC_ATTR, "name");
    static final long FABRIC_PROV_NAME = off(FI_FABRIC_ATTR, "prov_name");

    static final long FID_OPS = off(FID, "ops");
    static final long OPS_SIZE = off(FI_OPS, "size");
    static final long OPS_CLOSE = off(FI_OPS, "close");
    static final long OPS_BIND = off(FI_OPS, "bind");
    static final long OPS_CONTROL = off(FI_OPS, "control");

    static final long FABRIC_OPS = off(FID_FABRIC, "ops");
    static final long FABRIC_OPS_DOMAIN = off(FI_OPS_FABRIC, "domain");
    static final long DOMAIN_OPS = off(FID_DOMAIN, "ops");
    static final long DOMAIN_MR_OPS = off(FID_DOMAIN, "mr");
    static final long DOMAIN_OPS_AV_OPEN = off(FI_OPS_DOMAIN, "av_open");
    static final long DOMAIN_OPS_CQ_OPEN = off(FI_OPS_DOMAIN, "cq_open");
    static final long DOMAIN_OPS_ENDPOINT = off(FI_OPS_DOMAIN, "endpoint");
    static final long MR_OPS_REG = off(FI_OPS_MR, "reg");
    static final long MR_MEM_DESC = off(FID_MR, "mem_desc");
    static final long MR_KEY = off(FID_MR, "key");
    static final long EP_OPS = off(FID_EP, "ops");
    static final long EP_CM = off(FID_EP, "cm");
    static final long EP_RMA = off(FID_EP, "rma");
    static final long EP_OPS_CANCEL = off(FI_OPS_EP, "cancel");
    static final long CM_GETNAME = off(FI_OPS_CM, "getname");
    static final long RMA_READ = off(FI_OPS_RMA, "read");
    static final long RMA_WRITE = off(FI_OPS_RMA, "write");
    static final long AV_OPS = off(FID_AV, "ops");
    static final long AV_OPS_INSERT = off(FI_OPS_AV, "insert");
    static final long AV_ATTR_TYPE = off(FI_AV_ATTR, "type");
    static final long AV_ATTR_COUNT = off(FI_AV_ATTR, "count");
    static final long CQ_OPS = off(FID_CQ, "ops");
    static final long CQ_OPS_READ = off(FI_OPS_CQ, "read");
    static final long CQ_OPS_READERR = off(FI_OPS_CQ, "readerr");
    static final long CQ_OPS_STRERROR = off(FI_OPS_CQ, "strerror");
    static final long CQ_ATTR_SIZE = off(FI_CQ_ATTR, "size");
    static final long CQ_ATTR_FORMAT = off(FI_CQ_ATTR, "format");
    static final long CQ_ATTR_WAIT_OBJ = off(FI_CQ_ATTR, "wait_obj");
    static final long CQE_OP_CONTEXT = off(FI_CQ_DATA_ENTRY, "op_context");
    static final long CQE_FLAGS = off(FI_CQ_DATA_ENTRY, "flags");
    static final long CQE_SIZE = FI_CQ_DATA_ENTRY.byteSize();
    static final long ERR_OP_CONTEXT = off(FI_CQ_ERR_ENTRY, "op_context");
    static final long ERR_ERR = off(FI_CQ_ERR_ENTRY, "err");
    static final long ERR_PROV_ERRNO = off(FI_CQ_ERR_ENTRY, "prov_errno");
    static final long ERR_ERR_DATA = off(FI_CQ_ERR_ENTRY, "err_data");
    static final long ERR_ERR_DATA_SIZE = off(FI_CQ_ERR_ENTRY, "err_data_size");
    /**
     * Bytes allocated for one error entry: newer libfabric releases append fields (e.g. {@code src_addr}) and a
     * provider built against them may write past the 1.17 size.
     */
    static final long ERR_ENTRY_ALLOC = 256;
    static final long CONTEXT_SIZE = FI_CONTEXT2_LAYOUT.byteSize();

    // ---- constants (fabric.h, fi_errno.h) ------------------------------------------------------------------------

    static int version(int major, int minor) {
        return (major << 16) | minor;
    }

    /** The API version this binding is written against. */
    static final int API_VERSION = version(1, 17);

    static final long FI_MSG = 1L << 1;
    static final long FI_RMA = 1L << 2;
    static final long FI_READ = 1L << 8;
    static final long FI_WRITE = 1L << 9;
    static final long FI_RECV = 1L << 10;
    static final long FI_SEND = 1L << 11;
    static final long FI_TRANSMIT = FI_SEND;
    static final long FI_REMOTE_READ = 1L << 12;
    static final long FI_REMOTE_WRITE = 1L << 13;
    static final long FI_COMPLETION = 1L << 24;
    static final long FI_TRANSMIT_COMPLETE = 1L << 27;
    static final long FI_DELIVERY_COMPLETE = 1L << 28;
    static final long FI_HMEM = 1L << 47;
    static final long FI_SOURCE = 1L << 57;
    static final long FI_CONTEXT = 1L << 59;
    static final long FI_CONTEXT2 = 1L << 52;

    static final int FI_MR_LOCAL = 1 << 2;
    static final int FI_MR_RAW = 1 << 3;
    static final int FI_MR_VIRT_ADDR = 1 << 4;
    static final int FI_MR_ALLOCATED = 1 << 5;
    static final int FI_MR_PROV_KEY = 1 << 6;
    static final int FI_MR_MMU_NOTIFY = 1 << 7;
    static final int FI_MR_RMA_EVENT = 1 << 8;
    static final int FI_MR_ENDPOINT = 1 << 9;
    static final int FI_MR_HMEM = 1 << 10;

    static final int FI_EP_RDM = 3;
    static final int FI_THREAD_SAFE = 1;
    static final int FI_PROGRESS_AUTO = 1;
    static final int FI_PROGRESS_MANUAL = 2;
    static final int FI_AV_TABLE = 2;
    static final int FI_CQ_FORMAT_DATA = 3;
    static final int FI_WAIT_NONE = 0;
    static final int FI_ENABLE = 6;

    static final int FI_EPERM = 1;
    static final int FI_ENOENT = 2;
    static final int FI_EIO = 5;
    static final int FI_EAGAIN = 11;
    static final int FI_ENOMEM = 12;
    static final int FI_EACCES = 13;
    static final int FI_EFAULT = 14;
    static final int FI_EINVAL = 22;
    static final int FI_ENOSPC = 28;
    static final int FI_ENOSYS = 38;
    static final int FI_ENODATA = 61;
    static final int FI_EMSGSIZE = 90;
    static final int FI_EOPNOTSUPP = 95;
    static final int FI_EADDRNOTAVAIL = 99;
    static final int FI_ENETDOWN = 100;
    static final int FI_ENETUNREACH = 101;
    static final int FI_ECONNABORTED = 103;
    static final int FI_ECONNRESET = 104;
    static final int FI_ETIMEDOUT = 110;
    static final int FI_ECONNREFUSED = 111;
    static final int FI_EHOSTDOWN = 112;
    static final int FI_EHOSTUNREACH = 113;
    static final int FI_ECANCELED = 125;
    static final int FI_EOTHER = 256;
    static final int FI_ETOOSMALL = 257;
    static final int FI_EAVAIL = 259;
    static final int FI_ETRUNC = 265;
    static final int FI_ENOKEY = 266;
    static final int FI_ENOAV = 267;
    static final int FI_EOVERRUN = 268;
    static final int FI_ENORX = 269;

    /** Names of the mode bits in {@code mr_mode}, lowest bit first, for messages and the segment attribute. */
    static String mrModeNames(int mrMode) {
        String[] names = {"FI_MR_BASIC", "FI_MR_SCALABLE", "FI_MR_LOCAL", "FI_MR_RAW", "FI_MR_VIRT_ADDR",
                "FI_MR_ALLOCATED", "FI_MR_PROV_KEY", "FI_MR_MMU_NOTIFY", "FI_MR_RMA_EVENT", "FI_MR_ENDPOINT",
                "FI_MR_HMEM", "FI_MR_COLLECTIVE"};
        StringBuilder sb = new StringBuilder();
        for (int bit = 0; bit < 32; bit++) {
            if ((mrMode & (1 << bit)) != 0) {
                if (!sb.isEmpty()) {
                    sb.append('|');
                }
                sb.append(bit < names.length ? names[bit] : "0x" + Integer.toHexString(1 << bit));
            }
        }
        return sb.isEmpty() ? "none" : sb.toString();
    }

    // ---- building C structs --------------------------------------------------------------------------------------

    private static MemoryLayout u64(String name) {
        return JAVA_LONG.withName(name);
    }

    private static MemoryLayout u32(String name) {
        return JAVA_INT.withName(name);
    }

    private static MemoryLayout ptr(String name) {
        return ADDRESS.withName(name);
    }

    /** A struct laid out by the C rules: each member at its natural alignment, the whole padded to the largest. */
    static StructLayout struct(String name, MemoryLayout... members) {
        List<MemoryLayout> laid = new ArrayList<>();
        long offset = 0;
        long maxAlign = 1;
        for (MemoryLayout m : members) {
            long align = m.byteAlignment();
            long pad = (align - offset % align) % align;
            if (pad > 0) {
                laid.add(MemoryLayout.paddingLayout(pad));
                offset += pad;
            }
            laid.add(m);
            offset += m.byteSize();
            maxAlign = Math.max(maxAlign, align);
        }
        long tail = (maxAlign - offset % maxAlign) % maxAlign;
        if (tail > 0) {
            laid.add(MemoryLayout.paddingLayout(tail));
        }
        return MemoryLayout.structLayout(laid.toArray(MemoryLayout[]::new)).withName(name);
    }

    static long off(StructLayout layout, String field) {
        return layout.byteOffset(PathElement.groupElement(field));
    }
}
