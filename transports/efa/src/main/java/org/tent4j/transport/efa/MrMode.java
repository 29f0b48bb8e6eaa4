package org.tent4j.transport.efa;

/**
 * What a provider's {@code mr_mode} asks of this transport, decided in one place:
 * <ul>
 *   <li>{@code FI_MR_VIRT_ADDR}: RMA addresses are the target's virtual addresses, so a buffer publishes its own
 *       address as {@code base}; otherwise they are offsets into the region and {@code base} is 0. The initiator
 *       always computes {@code base + (remoteAddress - bufferAddress)} and so never needs the target's mode.</li>
 *   <li>{@code FI_MR_PROV_KEY}: the provider picks the key ({@code fi_mr_key} after registration); otherwise the
 *       transport requests keys that are unique within its domain.</li>
 *   <li>{@code FI_MR_LOCAL}: local buffers of an operation must be registered and their {@code fi_mr_desc} passed;
 *       otherwise a NULL descriptor is passed.</li>
 *   <li>{@code FI_MR_ALLOCATED}: buffers are registered only once they are allocated, which is always the case.</li>
 * </ul>
 * Anything else ({@code FI_MR_ENDPOINT}, {@code FI_MR_RAW}, {@code FI_MR_HMEM} ...) is not requested in the hints,
 * so a provider that needs it offers no endpoint; {@link #unsupported()} guards against one that ignores that.
 */
record MrMode(int bits) {
    /** The mr_mode bits this transport honours; sent as the hints' mr_mode. */
    static final int SUPPORTED = FiAbi.FI_MR_LOCAL | FiAbi.FI_MR_VIRT_ADDR | FiAbi.FI_MR_ALLOCATED
            | FiAbi.FI_MR_PROV_KEY;
    /** The legacy FI_MR_BASIC / FI_MR_SCALABLE values; with API >= 1.5 a provider reports bits instead. */
    private static final int LEGACY = 0x3;

    boolean virtualAddresses() {
        return (bits & FiAbi.FI_MR_VIRT_ADDR) != 0;
    }

    boolean providerKeys() {
        return (bits & FiAbi.FI_MR_PROV_KEY) != 0;
    }

    boolean localDescriptors() {
        return (bits & FiAbi.FI_MR_LOCAL) != 0;
    }

    /** Bits this transport cannot honour, 0 if none. */
    int unsupported() {
        return bits & ~SUPPORTED & ~LEGACY;
    }

    /** The {@code base} a buffer at {@code bufferAddress} publishes. */
    long publishedBase(long bufferAddress) {
        return virtualAddresses() ? bufferAddress : 0;
    }

    /** The key to request from fi_mr_reg: {@code candidate} (unique in the domain), or 0 when the provider picks. */
    long requestedKey(long candidate) {
        return providerKeys() ? 0 : candidate;
    }

    /**
     * The RMA address of {@code remoteAddress} inside a remote buffer that starts at {@code bufferAddress} and
     * published {@code base}.
     */
    static long rmaAddress(long base, long bufferAddress, long remoteAddress) {
        return base + (remoteAddress - bufferAddress);
    }

    @Override
    public String toString() {
        return FiAbi.mrModeNames(bits);
    }
}
