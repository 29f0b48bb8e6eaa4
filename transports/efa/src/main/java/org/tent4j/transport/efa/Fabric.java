package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The libfabric objects of one transport: fabric, domain, one address vector ({@code FI_AV_TABLE}), one completion
 * queue ({@code FI_CQ_FORMAT_DATA}) and {@code endpointCount} enabled RDM endpoints bound to both. Every ops-table
 * function is resolved once, when its object is opened, and called through {@link LibFabric}'s address-taking handles.
 *
 * <p>Thread safety comes from the domain ({@code FI_THREAD_SAFE}); the transport still posts and polls from one thread.
 */
final class Fabric implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Fabric.class);
    private static final int NAME_MAX = 1024;

    private final LibFabric lib;
    private final FabricInfo info;
    private final Arena arena = Arena.ofShared();
    /** Objects to fi_close, in opening order; closed in reverse, endpoints first. */
    private final List<Closable> opened = new ArrayList<>();
    /** Open memory regions; closed after the endpoints and before the domain. */
    private final Set<MemoryRegion> regions = new HashSet<>();

    private final MemorySegment domain;
    private final MemorySegment mrRegFn;
    private final MemorySegment av;
    private final MemorySegment avInsertFn;
    private final MemorySegment cq;
    private final MemorySegment cqReadFn;
    private final MemorySegment cqReadErrFn;
    private final MemorySegment cqStrerrorFn;
    private final MemorySegment[] endpoints;
    private final MemorySegment[] rmaWriteFn;
    private final MemorySegment[] rmaReadFn;
    private final MemorySegment[] cancelFn;
    private final byte[][] names;
    private boolean closed;

    private record Closable(String what, MemorySegment fid, MemorySegment closeFn) {
    }

    Fabric(LibFabric lib, FabricInfo info, int endpointCount, long cqSize) {
        this.lib = lib;
        this.info = info;
        try {
            MemorySegment out = arena.allocate(ADDRESS);
            check("fi_fabric", lib.fabric(info.fabricAttr(), out, MemorySegment.NULL));
            MemorySegment fabric = opened("fabric", out.get(ADDRESS, 0));

            MemorySegment domainFn = LibFabric.slot(fabric, FiAbi.FABRIC_OPS, FiAbi.FABRIC_OPS_DOMAIN, "fi_domain");
            check("fi_domain", (int) LibFabric.OPS_OPEN.invokeExact(domainFn, fabric, info.entry(), out,
                    MemorySegment.NULL));
            domain = opened("domain", out.get(ADDRESS, 0));
            mrRegFn = LibFabric.slot(domain, FiAbi.DOMAIN_MR_OPS, FiAbi.MR_OPS_REG, "fi_mr_reg");

            MemorySegment avAttr = arena.allocate(FiAbi.FI_AV_ATTR);
            avAttr.set(JAVA_INT, FiAbi.AV_ATTR_TYPE, FiAbi.FI_AV_TABLE);
            avAttr.set(JAVA_LONG, FiAbi.AV_ATTR_COUNT, 64);
            MemorySegment avOpenFn = LibFabric.slot(domain, FiAbi.DOMAIN_OPS, FiAbi.DOMAIN_OPS_AV_OPEN, "fi_av_open");
            check("fi_av_open(FI_AV_TABLE)", (int) LibFabric.OPS_OPEN.invokeExact(avOpenFn, domain, avAttr, out,
                    MemorySegment.NULL));
            av = opened("address vector", out.get(ADDRESS, 0));
            avInsertFn = LibFabric.slot(av, FiAbi.AV_OPS, FiAbi.AV_OPS_INSERT, "fi_av_insert");

            MemorySegment cqAttr = arena.allocate(FiAbi.FI_CQ_ATTR);
            cqAttr.set(JAVA_LONG, FiAbi.CQ_ATTR_SIZE, cqSize);
            cqAttr.set(JAVA_INT, FiAbi.CQ_ATTR_FORMAT, FiAbi.FI_CQ_FORMAT_DATA);
            cqAttr.set(JAVA_INT, FiAbi.CQ_ATTR_WAIT_OBJ, FiAbi.FI_WAIT_NONE);
            MemorySegment cqOpenFn = LibFabric.slot(domain, FiAbi.DOMAIN_OPS, FiAbi.DOMAIN_OPS_CQ_OPEN, "fi_cq_open");
            check("fi_cq_open(FI_CQ_FORMAT_DATA, size " + cqSize + ")", (int) LibFabric.OPS_OPEN.invokeExact(
                    cqOpenFn, domain, cqAttr, out, MemorySegment.NULL));
            cq = opened("completion queue", out.get(ADDRESS, 0));
            cqReadFn = LibFabric.slot(cq, FiAbi.CQ_OPS, FiAbi.CQ_OPS_READ, "fi_cq_read");
            cqReadErrFn = LibFabric.slot(cq, FiAbi.CQ_OPS, FiAbi.CQ_OPS_READERR, "fi_cq_readerr");
            cqStrerrorFn = LibFabric.slot(cq, FiAbi.CQ_OPS, FiAbi.CQ_OPS_STRERROR, "fi_cq_strerror");

            MemorySegment endpointFn = LibFabric.slot(domain, FiAbi.DOMAIN_OPS, FiAbi.DOMAIN_OPS_ENDPOINT,
                    "fi_endpoint");
            endpoints = new MemorySegment[endpointCount];
            rmaWriteFn = new MemorySegment[endpointCount];
            rmaReadFn = new MemorySegment[endpointCount];
            cancelFn = new MemorySegment[endpointCount];
            names = new byte[endpointCount][];
            for (int i = 0; i < endpointCount; i++) {
                check("fi_endpoint", (int) LibFabric.OPS_OPEN.invokeExact(endpointFn, domain, info.entry(), out,
                        MemorySegment.NULL));
                MemorySegment ep = opened("endpoint " + i, out.get(ADDRESS, 0));
                MemorySegment bindFn = LibFabric.slot(ep, FiAbi.FID_OPS, FiAbi.OPS_BIND, "fi_ep_bind");
                check("fi_ep_bind(av)", (int) LibFabric.OPS_BIND.invokeExact(bindFn, ep, av, 0L));
                check("fi_ep_bind(cq, FI_TRANSMIT|FI_RECV)", (int) LibFabric.OPS_BIND.invokeExact(bindFn, ep, cq,
                        FiAbi.FI_TRANSMIT | FiAbi.FI_RECV));
                MemorySegment controlFn = LibFabric.slot(ep, FiAbi.FID_OPS, FiAbi.OPS_CONTROL, "fi_enable");
                check("fi_enable", (int) LibFabric.OPS_CONTROL.invokeExact(controlFn, ep, FiAbi.FI_ENABLE,
                        MemorySegment.NULL));
                endpoints[i] = ep;
                rmaWriteFn[i] = LibFabric.slot(ep, FiAbi.EP_RMA, FiAbi.RMA_WRITE, "fi_write");
                rmaReadFn[i] = LibFabric.slot(ep, FiAbi.EP_RMA, FiAbi.RMA_READ, "fi_read");
                cancelFn[i] = cancelSlot(ep);
                names[i] = getname(ep);
            }
        } catch (Throwable t) {
            closeOpened();
            arena.close();
            if (t instanceof FabricException f) {
                throw f;
            }
            throw new FabricException(0, "opening " + info.provider + " endpoints failed: " + t, t);
        }
    }

    private static MemorySegment cancelSlot(MemorySegment ep) {
        try {
            return LibFabric.slot(ep, FiAbi.EP_OPS, FiAbi.EP_OPS_CANCEL, "fi_cancel");
        } catch (UnsupportedOperationException e) {
            return MemorySegment.NULL;
        }
    }

    private MemorySegment opened(String what, MemorySegment fid) {
        MemorySegment f = fid.reinterpret(FiAbi.FID.byteSize());
        opened.add(new Closable(what, f, LibFabric.slot(f, FiAbi.FID_OPS, FiAbi.OPS_CLOSE, "fi_close(" + what + ")")));
        return f;
    }

    private void check(String call, int rc) {
        if (rc != 0) {
            throw new FabricException(rc, lib.describe(call, rc) + " [" + info.provider + "]");
        }
    }

    private byte[] getname(MemorySegment ep) throws Throwable {
        MemorySegment getnameFn = LibFabric.slot(ep, FiAbi.EP_CM, FiAbi.CM_GETNAME, "fi_getname");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment len = a.allocate(JAVA_LONG);
            len.set(JAVA_LONG, 0, NAME_MAX);
            MemorySegment buf = a.allocate(NAME_MAX);
            int rc = (int) LibFabric.OPS_GETNAME.invokeExact(getnameFn, ep, buf, len);
            if (rc == -FiAbi.FI_ETOOSMALL) {
                buf = a.allocate(len.get(JAVA_LONG, 0));
                rc = (int) LibFabric.OPS_GETNAME.invokeExact(getnameFn, ep, buf, len);
            }
            check("fi_getname", rc);
            return buf.asSlice(0, len.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
        }
    }

    LibFabric lib() {
        return lib;
    }

    FabricInfo info() {
        return info;
    }

    int endpointCount() {
        return endpoints.length;
    }

    /** Endpoint {@code i}'s address as {@code fi_getname} gives it. */
    byte[] name(int i) {
        return names[i].clone();
    }

    /** {@code fi_av_insert} of one address; returns its {@code fi_addr_t}. */
    long insertAddress(byte[] address) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment addr = a.allocateFrom(JAVA_BYTE, address);
            MemorySegment fiAddr = a.allocate(JAVA_LONG);
            int rc = (int) LibFabric.OPS_AV_INSERT.invokeExact(avInsertFn, av, addr, 1L, fiAddr, 0L,
                    MemorySegment.NULL);
            if (rc != 1) {
                throw new FabricException(rc < 0 ? rc : -FiAbi.FI_EINVAL, rc < 0 ? lib.describe("fi_av_insert", rc)
                        : "fi_av_insert inserted " + rc + " of 1 addresses");
            }
            return fiAddr.get(JAVA_LONG, 0);
        } catch (FabricException e) {
            throw e;
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    /** A registered memory region: {@code fid_mr}, its key and its local descriptor. */
    record MemoryRegion(MemorySegment mr, long key, MemorySegment desc, MemorySegment closeFn) {
    }

    /** {@code fi_mr_reg(domain, buf, len, access, 0, requestedKey, 0, &mr, NULL)}. */
    MemoryRegion register(MemorySegment memory, long access, long requestedKey) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int rc = (int) LibFabric.OPS_MR_REG.invokeExact(mrRegFn, domain, memory, memory.byteSize(), access, 0L,
                    requestedKey, 0L, out, MemorySegment.NULL);
            if (rc != 0) {
                throw new FabricException(rc, lib.describe("fi_mr_reg", rc));
            }
            MemorySegment mr = out.get(ADDRESS, 0).reinterpret(FiAbi.FID_MR.byteSize());
            MemorySegment closeFn = LibFabric.slot(mr, FiAbi.FID_OPS, FiAbi.OPS_CLOSE, "fi_close(mr)");
            MemoryRegion region = new MemoryRegion(mr, mr.get(JAVA_LONG, FiAbi.MR_KEY),
                    mr.get(ADDRESS, FiAbi.MR_MEM_DESC), closeFn);
            synchronized (this) {
                if (closed) {
                    int ignored = (int) LibFabric.OPS_CLOSE.invokeExact(closeFn, mr);
                    throw new FabricException(-FiAbi.FI_ECANCELED, "the fabric was closed during fi_mr_reg");
                }
                regions.add(region);
            }
            return region;
        } catch (FabricException e) {
            throw e;
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    /** fi_close of a memory region; returns libfabric's code (0 on success, also when it is already closed). */
    int close(MemoryRegion region) {
        synchronized (this) {
            if (!regions.remove(region)) {
                return 0;
            }
        }
        return closeRegion(region);
    }

    private static int closeRegion(MemoryRegion region) {
        try {
            return (int) LibFabric.OPS_CLOSE.invokeExact(region.closeFn(), region.mr());
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    // ---- data path (progress thread) -----------------------------------------------------------------------------

    long write(int ep, MemorySegment buf, long len, MemorySegment desc, long fiAddr, long addr, long key,
               MemorySegment context) {
        try {
            return (long) LibFabric.OPS_RMA.invokeExact(rmaWriteFn[ep], endpoints[ep], buf, len, desc, fiAddr, addr,
                    key, context);
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    long read(int ep, MemorySegment buf, long len, MemorySegment desc, long fiAddr, long addr, long key,
              MemorySegment context) {
        try {
            return (long) LibFabric.OPS_RMA.invokeExact(rmaReadFn[ep], endpoints[ep], buf, len, desc, fiAddr, addr,
                    key, context);
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    /** {@code fi_cq_read} into {@code entries} (fi_cq_data_entry[count]); also drives manual progress. */
    long readCompletions(MemorySegment entries, long count) {
        try {
            return (long) LibFabric.OPS_CQ_READ.invokeExact(cqReadFn, cq, entries, count);
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    /** {@code fi_cq_readerr} into {@code entry} ({@link FiAbi#ERR_ENTRY_ALLOC} bytes, zeroed by the caller). */
    long readError(MemorySegment entry) {
        try {
            return (long) LibFabric.OPS_CQ_READ.invokeExact(cqReadErrFn, cq, entry, 0L);
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    /** The provider's text for an error entry ({@code fi_cq_strerror}). */
    String providerError(int provErrno, MemorySegment errData, MemorySegment scratch) {
        try {
            MemorySegment s = (MemorySegment) LibFabric.OPS_CQ_STRERROR.invokeExact(cqStrerrorFn, cq, provErrno,
                    errData, scratch, scratch.byteSize());
            return LibFabric.cString(s);
        } catch (Throwable t) {
            return "prov_errno " + provErrno;
        }
    }

    /** Best-effort {@code fi_cancel} of an operation; most providers cannot cancel RMA and say so. */
    long cancel(int ep, MemorySegment context) {
        if (cancelFn[ep].address() == 0) {
            return -FiAbi.FI_ENOSYS;
        }
        try {
            return (long) LibFabric.OPS_CANCEL.invokeExact(cancelFn[ep], endpoints[ep], context);
        } catch (Throwable t) {
            throw LibFabric.rethrow(t);
        }
    }

    /**
     * Closes the endpoints, then the memory regions still open, then CQ, AV, domain and fabric (libfabric refuses to
     * close a domain that still has objects), then frees the attribute memory.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeOpened();
        arena.close();
    }

    private void closeOpened() {
        int firstEndpoint = opened.size();
        while (firstEndpoint > 0 && opened.get(firstEndpoint - 1).what().startsWith("endpoint")) {
            firstEndpoint--;
        }
        closeRange(firstEndpoint, opened.size());
        for (MemoryRegion r : regions) {
            try {
                int rc = closeRegion(r);
                if (rc != 0) {
                    LOG.warn("fi_close(mr) of {}: {}", info.provider, lib.describe("fi_close", rc));
                }
            } catch (RuntimeException e) {
                LOG.warn("fi_close(mr) of {} failed", info.provider, e);
            }
        }
        regions.clear();
        closeRange(0, firstEndpoint);
        opened.clear();
    }

    private void closeRange(int from, int to) {
        for (int i = to - 1; i >= from; i--) {
            Closable c = opened.get(i);
            try {
                int rc = (int) LibFabric.OPS_CLOSE.invokeExact(c.closeFn(), c.fid());
                if (rc != 0) {
                    LOG.warn("fi_close({}) of {}: {}", c.what(), info.provider, lib.describe("fi_close", rc));
                }
            } catch (Throwable t) {
                LOG.warn("fi_close({}) of {} failed", c.what(), info.provider, t);
            }
        }
    }

    /** A libfabric call failed; {@link #rc} is its (negative) return code. */
    static final class FabricException extends RuntimeException {
        final int rc;

        FabricException(int rc, String message) {
            super(message);
            this.rc = rc;
        }

        FabricException(int rc, String message, Throwable cause) {
            super(message, cause);
            this.rc = rc;
        }
    }
}
