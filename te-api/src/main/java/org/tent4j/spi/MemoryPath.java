package org.tent4j.spi;

import org.tent4j.api.MemoryKind;

/**
 * A pair of memory kinds a transport can move bytes between: local side and remote side.
 *
 * <p>Make one with {@code of(...)}. The canonical constructor is not part of the contract: a component added in a later
 * version changes it, while {@code of} keeps its signature beside a new overload (BoundariesTest keeps every module on
 * {@code of}).
 *
 * @param local  the kind of the request's local memory
 * @param remote the kind of the target buffer's memory
 */
public record MemoryPath(MemoryKind local, MemoryKind remote) {
    /**
     * The factory plugins use instead of the constructor.
     *
     * @param local  the kind of local memory
     * @param remote the kind of remote memory
     * @return the pair
     */
    public static MemoryPath of(MemoryKind local, MemoryKind remote) {

        return new MemoryPath(local, remote);
    }

    @Override
    public String toString() {
        return local.prefix() + "->" + remote.prefix();
    }
}
