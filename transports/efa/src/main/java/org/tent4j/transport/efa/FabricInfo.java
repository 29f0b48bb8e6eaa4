package org.tent4j.transport.efa;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The endpoint description {@code fi_getinfo} chose for one provider: the first entry of the list it returned for
 * this transport's hints. Owns the list until {@link #close()} ({@code fi_freeinfo}).
 *
 * <p>Hints (what the transport needs and what it can cope with): {@code FI_EP_RDM}; {@code FI_RMA} with local and
 * remote read/write; {@code FI_DELIVERY_COMPLETE} as the default transmit flag, so a WRITE completes only once its
 * bytes are visible at the target (with {@code tcp;ofi_rxm} the default completion comes earlier); {@code
 * FI_THREAD_SAFE}, because memory registration and address insertion run on caller threads while the progress
 * thread posts and polls; {@code FI_AV_TABLE}; mode {@code FI_CONTEXT|FI_CONTEXT2} (each operation's context points
 * at 64 bytes the transport owns); and every mr_mode bit {@link MrMode} can honour.
 */
final class FabricInfo implements AutoCloseable {
    static final long CAPS = FiAbi.FI_RMA | FiAbi.FI_READ | FiAbi.FI_WRITE | FiAbi.FI_REMOTE_READ
            | FiAbi.FI_REMOTE_WRITE;
    static final long MODE = FiAbi.FI_CONTEXT | FiAbi.FI_CONTEXT2;

    private final LibFabric lib;
    private final MemorySegment list;
    private final MemorySegment entry;
    final String provider;
    final String fabricName;
    final String domainName;
    final int mrMode;
    final long maxMsgSize;
    final int dataProgress;
    final long txSize;
    /** The endpoint's default transmit flags; must include FI_DELIVERY_COMPLETE, as the hints asked. */
    final long txOpFlags;
    final long mrKeySize;
    final int apiVersion;
    private boolean closed;

    private FabricInfo(LibFabric lib, MemorySegment list, int apiVersion) {
        this.lib = lib;
        this.list = list;
        this.apiVersion = apiVersion;
        this.entry = list.reinterpret(FiAbi.FI_INFO.byteSize());
        MemorySegment fabric = attr(FiAbi.INFO_FABRIC_ATTR, FiAbi.FI_FABRIC_ATTR.byteSize());
        MemorySegment domain = attr(FiAbi.INFO_DOMAIN_ATTR, FiAbi.FI_DOMAIN_ATTR.byteSize());
        MemorySegment ep = attr(FiAbi.INFO_EP_ATTR, FiAbi.FI_EP_ATTR.byteSize());
        MemorySegment tx = attr(FiAbi.INFO_TX_ATTR, FiAbi.FI_TX_ATTR.byteSize());
        provider = LibFabric.cString(fabric.get(ADDRESS, FiAbi.FABRIC_PROV_NAME));
        fabricName = LibFabric.cString(fabric.get(ADDRESS, FiAbi.FABRIC_NAME));
        domainName = LibFabric.cString(domain.get(ADDRESS, FiAbi.DOMAIN_NAME));
        mrMode = domain.get(JAVA_INT, FiAbi.DOMAIN_MR_MODE);
        mrKeySize = domain.get(JAVA_LONG, FiAbi.DOMAIN_MR_KEY_SIZE);
        dataProgress = domain.get(JAVA_INT, FiAbi.DOMAIN_DATA_PROGRESS);
        maxMsgSize = ep.get(JAVA_LONG, FiAbi.EP_MAX_MSG_SIZE);
        txSize = tx.get(JAVA_LONG, FiAbi.TX_SIZE);
        txOpFlags = tx.get(JAVA_LONG, FiAbi.TX_OP_FLAGS);
    }

    private MemorySegment attr(long field, long size) {
        MemorySegment p = entry.get(ADDRESS, field);
        if (p.address() == 0) {
            throw new IllegalStateException("fi_getinfo returned an fi_info without " + field);
        }
        return p.reinterpret(size);
    }

    /** The chosen fi_info, for fi_fabric / fi_domain / fi_endpoint. */
    MemorySegment entry() {
        return entry;
    }

    MemorySegment fabricAttr() {
        return entry.get(ADDRESS, FiAbi.INFO_FABRIC_ATTR);
    }

    /** The API version to ask for: this binding's, or the library's if that is older. */
    static int apiVersion(LibFabric lib) {
        return Integer.compareUnsigned(lib.libraryVersion(), FiAbi.API_VERSION) < 0
                ? lib.libraryVersion() : FiAbi.API_VERSION;
    }

    /**
     * Asks libfabric for an RDM + RMA endpoint of {@code provider} ({@code efa}, {@code tcp;ofi_rxm}, {@code shm},
     * {@code sockets} ...).
     *
     * @throws NoEndpointException with the return code and a diagnosis when there is none
     */
    static FabricInfo query(LibFabric lib, String provider) throws NoEndpointException {
        int version = apiVersion(lib);
        long rc;
        MemorySegment result;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment hints = hints(lib, provider, true);
            try {
                rc = lib.getinfo(version, MemorySegment.NULL, MemorySegment.NULL, 0, hints, out);
            } finally {
                lib.freeinfo(hints);
            }
            result = out.get(ADDRESS, 0);
            if (rc == 0 && result.address() != 0) {
                return new FabricInfo(lib, result, version);
            }
            if (rc == 0) {
                rc = -FiAbi.FI_ENODATA;
            }
            throw new NoEndpointException((int) rc, lib.describe("fi_getinfo for provider '" + provider + "'", rc)
                    + ": " + diagnose(lib, provider, version, rc, arena));
        }
    }

    /** Why a query failed: the provider is absent altogether, or it has no endpoint matching the hints. */
    private static String diagnose(LibFabric lib, String provider, int version, long rc, Arena arena) {
        if (rc != -FiAbi.FI_ENODATA) {
            return "libfabric " + LibFabric.versionString(lib.libraryVersion()) + " rejected the query";
        }
        MemorySegment out = arena.allocate(ADDRESS);
        MemorySegment bare = hints(lib, provider, false);
        int bareRc;
        try {
            bareRc = lib.getinfo(version, MemorySegment.NULL, MemorySegment.NULL, 0, bare, out);
        } finally {
            lib.freeinfo(bare);
        }
        MemorySegment any = out.get(ADDRESS, 0);
        if (bareRc == 0 && any.address() != 0) {
            lib.freeinfo(any);
            return "provider '" + provider + "' is present but offers no FI_EP_RDM endpoint with FI_RMA, "
                    + "FI_DELIVERY_COMPLETE, FI_THREAD_SAFE, FI_AV_TABLE and mr_mode within "
                    + FiAbi.mrModeNames(MrMode.SUPPORTED);
        }
        if (Efa.isEfaProvider(provider)) {
            return "no EFA device (the efa provider finds no device; `fi_info -p efa` lists none)";
        }
        return "provider '" + provider + "' is not available here (no device for it, or it is not built into "
                + "this libfabric " + LibFabric.versionString(lib.libraryVersion()) + "; `fi_info -l` lists them)";
    }

    /**
     * Hints from {@code fi_allocinfo()}. {@code prov_name} is a strdup'd C string because fi_freeinfo frees it.
     * With {@code full == false} only the provider is constrained, to tell "absent" from "unsuitable".
     */
    static MemorySegment hints(LibFabric lib, String provider, boolean full) {
        MemorySegment hints = lib.allocinfo();
        MemorySegment fabric = hints.get(ADDRESS, FiAbi.INFO_FABRIC_ATTR).reinterpret(FiAbi.FI_FABRIC_ATTR.byteSize());
        fabric.set(ADDRESS, FiAbi.FABRIC_PROV_NAME, lib.strdup(provider));
        if (!full) {
            return hints;
        }
        hints.set(JAVA_LONG, FiAbi.INFO_CAPS, CAPS);
        hints.set(JAVA_LONG, FiAbi.INFO_MODE, MODE);
        MemorySegment ep = hints.get(ADDRESS, FiAbi.INFO_EP_ATTR).reinterpret(FiAbi.FI_EP_ATTR.byteSize());
        ep.set(JAVA_INT, FiAbi.EP_TYPE, FiAbi.FI_EP_RDM);
        MemorySegment domain = hints.get(ADDRESS, FiAbi.INFO_DOMAIN_ATTR)
                .reinterpret(FiAbi.FI_DOMAIN_ATTR.byteSize());
        domain.set(JAVA_INT, FiAbi.DOMAIN_MR_MODE, MrMode.SUPPORTED);
        domain.set(JAVA_INT, FiAbi.DOMAIN_THREADING, FiAbi.FI_THREAD_SAFE);
        domain.set(JAVA_INT, FiAbi.DOMAIN_AV_TYPE, FiAbi.FI_AV_TABLE);
        MemorySegment tx = hints.get(ADDRESS, FiAbi.INFO_TX_ATTR).reinterpret(FiAbi.FI_TX_ATTR.byteSize());
        tx.set(JAVA_LONG, FiAbi.TX_OP_FLAGS, FiAbi.FI_DELIVERY_COMPLETE);
        return hints;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            lib.freeinfo(list);
        }
    }

    @Override
    public String toString() {
        return "provider=" + provider + " fabric=" + fabricName + " domain=" + domainName + " mr_mode="
                + FiAbi.mrModeNames(mrMode) + " max_msg_size=" + Long.toUnsignedString(maxMsgSize)
                + " data_progress=" + (dataProgress == FiAbi.FI_PROGRESS_MANUAL ? "manual"
                : dataProgress == FiAbi.FI_PROGRESS_AUTO ? "auto" : String.valueOf(dataProgress));
    }

    /** fi_getinfo found nothing usable; {@link #rc} is its return code. */
    static final class NoEndpointException extends Exception {
        final int rc;

        NoEndpointException(int rc, String message) {
            super(message, null, false, false);
            this.rc = rc;
        }
    }
}
