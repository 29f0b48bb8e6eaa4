package org.tent4j.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.tent4j.api.MemoryKind;

class TransportCapabilitiesTest {

    @Test
    void builderDefaultsDeclareHostMemoryOnlyAndNoLimits() {
        TransportCapabilities c = TransportCapabilities.builder().build();
        assertEquals(TransportCapabilities.hostOnly(), c.memoryPaths());
        assertFalse(c.sameHostOnly());
        assertFalse(c.cancellation());
        assertEquals(Long.MAX_VALUE, c.maxSliceSize());
        assertEquals(TransportCapabilities.DEFAULT_RANK, c.rank());
    }

    @Test
    void memoryPathReplacesTheDefaultThenAdds() {
        TransportCapabilities c = TransportCapabilities.builder()
                .memoryPath(MemoryKind.CUDA, MemoryKind.CUDA).memoryPath(MemoryKind.CUDA, MemoryKind.CPU).build();
        assertEquals(Set.of(MemoryPath.of(MemoryKind.CUDA, MemoryKind.CUDA), MemoryPath.of(MemoryKind.CUDA, MemoryKind.CPU)),
                c.memoryPaths());
        assertFalse(c.supports(MemoryKind.CPU, MemoryKind.CPU));
        assertTrue(c.supports(MemoryKind.CUDA, MemoryKind.CPU));
    }

    @Test
    @SuppressWarnings("deprecation")
    void builderAndTheDeprecatedConstructorBuildEqualValues() {
        TransportCapabilities built = TransportCapabilities.builder().sameHostOnly(true).cancellation(true)
                .maxSliceSize(1 << 20).rank(7).build();
        TransportCapabilities positional = new TransportCapabilities(TransportCapabilities.hostOnly(), true, true, 1 << 20, 7);
        assertEquals(positional, built);
        assertEquals(positional.hashCode(), built.hashCode());
        assertEquals(built, built.toBuilder().build());
        assertEquals(3, built.toBuilder().rank(3).build().rank());
        assertEquals(7, built.rank(), "toBuilder must not change the original");
    }

    @Test
    void aNonPositiveSliceSizeIsRejectedAndNoPathsIsAllowed() {
        IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                () -> TransportCapabilities.builder().maxSliceSize(0).build());
        assertTrue(size.getMessage().contains("maxSliceSize"), size.getMessage());
        assertEquals(Set.of(), TransportCapabilities.builder().memoryPaths(List.of()).build().memoryPaths());
    }

    @Test
    void allocationBuilderDefaultsToNoBacking() {
        Runnable release = () -> { };
        MemoryAllocator.Allocation plain = MemoryAllocator.Allocation.builder(MemorySegment.NULL, release).build();
        assertEquals(Map.of(), plain.backing());
        MemoryAllocator.Allocation backed = MemoryAllocator.Allocation.builder(MemorySegment.NULL, release)
                .backing(Map.of("path", "/dev/shm/x")).build();
        assertEquals("/dev/shm/x", backed.backing().get("path"));
        assertEquals(release, backed.release());
        assertThrows(NullPointerException.class, () -> MemoryAllocator.Allocation.builder(MemorySegment.NULL, null));
    }
}
