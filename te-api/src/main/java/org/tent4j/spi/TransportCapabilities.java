package org.tent4j.spi;

import java.util.Set;

import org.tent4j.api.MemoryKind;

/**
 * What a transport declares it can do; the runtime selects from these and never guesses.
 *
 * @param memoryPaths  local→remote memory-kind pairs it can move between
 * @param sameHostOnly whether both engines must be on one machine (equal machine ids)
 * @param cancellation whether {@link PeerConnection#cancel} can stop a posted slice
 * @param maxSliceSize largest slice it accepts; the runtime never hands it a bigger one
 * @param rank         default order among transports, lower first (used when no preference is configured)
 */
public record TransportCapabilities(Set<MemoryPath> memoryPaths, boolean sameHostOnly, boolean cancellation,
                                    long maxSliceSize, int rank) {
    public TransportCapabilities {
        memoryPaths = Set.copyOf(memoryPaths);
        if (maxSliceSize <= 0) {
            throw new IllegalArgumentException("maxSliceSize must be > 0");
        }
    }

    /** Host memory to host memory only. */
    public static Set<MemoryPath> hostOnly() {
        return Set.of(MemoryPath.of(MemoryKind.CPU, MemoryKind.CPU));
    }

    public boolean supports(MemoryKind local, MemoryKind remote) {
        return memoryPaths.contains(new MemoryPath(local, remote));
    }
}
