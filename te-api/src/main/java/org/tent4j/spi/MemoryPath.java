package org.tent4j.spi;

import org.tent4j.api.MemoryKind;

/** A pair of memory kinds a transport can move bytes between: local side and remote side. */
public record MemoryPath(MemoryKind local, MemoryKind remote) {
    public static MemoryPath of(MemoryKind local, MemoryKind remote) {
        return new MemoryPath(local, remote);
    }

    @Override
    public String toString() {
        return local.prefix() + "->" + remote.prefix();
    }
}
