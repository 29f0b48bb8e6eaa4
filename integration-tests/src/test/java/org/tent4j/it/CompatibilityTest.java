package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.api.TransportInfo;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;

/**
 * Binary compatibility of the SPI: a transport plugin compiled against te-api 0.1 (commit 68b5e3a, when
 * {@link TransportCapabilities} and {@code MemoryAllocator.Allocation} were records built positionally) is loaded from
 * its committed jar through a {@link URLClassLoader} and {@link ServiceLoader}, and moves CRC-checked bytes between two
 * current engines, in memory its own allocator made. A second plugin, compiled against te-api as of a2dd85c (the SPI's
 * values built through builders and factories), builds the descriptor of a foreign name and moves bytes through it.
 * The jars and their source: src/test/compat (rebuild with build-old-shape-transport.sh there).
 */
class CompatibilityTest {
    private static final String PLUGIN_CLASS = "org.tent4j.compat.oldshape.OldShapeTransportProvider";
    private static final String ID = "oldshape";
    /** Several slices each: the plugin declares 64 KiB slices. */
    private static final long[] SIZES = {1, 4095, 64 << 10, (1 << 20) + 3};

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private static URLClassLoader pluginLoader() {
        return pluginLoader("old-shape-transport");
    }

    private static URLClassLoader pluginLoader(String name) {
        URL jar = CompatibilityTest.class.getResource("/compat/" + name + ".jar");
        assertNotNull(jar, "compat/" + name + ".jar is missing from the test resources");
        return new URLClassLoader(name, new URL[] {jar}, CompatibilityTest.class.getClassLoader());
    }

    @Test
    void theJarWasBuiltAgainstTheOldShape() {
        // the runtime under test has the builder-built class; the plugin was compiled when it was a record
        assertFalse(TransportCapabilities.class.isRecord());
        assertThrows(ClassNotFoundException.class, () -> Class.forName(PLUGIN_CLASS),
                "the old-shape plugin must come only from its jar, never from the test class path");
    }

    @Test
    void anOldPluginIsFoundAndMovesCrcCheckedBytesWithTheCurrentRuntime() throws Exception {
        URLClassLoader loader = open(pluginLoader());
        TransportProvider provider = ServiceLoader.load(TransportProvider.class, loader).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals(ID)).findFirst().orElseThrow();
        assertSame(loader, provider.getClass().getClassLoader());
        TransportCapabilities caps = provider.capabilities(); // the deprecated positional constructor, from old bytecode
        assertEquals(64 << 10, caps.maxSliceSize());
        assertTrue(caps.sameHostOnly());
        assertEquals(40, caps.rank());

        TransferEngine target = open(withContextLoader(loader, () -> TransferEngine.create(
                TransferEndToEndTest.cfg().set("transports.enabled", ID).build())));
        TransferEngine initiator = open(withContextLoader(loader, () -> TransferEngine.create(
                TransferEndToEndTest.cfg().set("transports.enabled", ID).set("transports.oldshape.label", "initiator")
                        .build())));
        assertEquals(List.of(new TransportInfo(ID, true, null, true)),
                initiator.transports().stream().filter(TransportInfo::enabled).toList());

        long size = (2L << 20) + 64;
        // with only oldshape enabled, allocate goes through its MemoryAllocator (Allocation built positionally)
        RegisteredMemory remote = target.allocate(size, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(size, Location.CPU, Permission.READ_WRITE);
        assertTrue(remote.engineAllocated() && local.engineAllocated());
        TargetProcess.pattern(local.segment(), 21);
        TargetProcess.pattern(remote.segment(), 22);
        movesIntactBytes(initiator, initiator.openSegment(target.segmentName()), ID, local, remote);
    }

    /** WRITEs and READs of every size in {@link #SIZES} through {@code transport}, each checked by CRC. */
    private static void movesIntactBytes(TransferEngine initiator, SegmentHandle segment, String transport,
                                         RegisteredMemory local, RegisteredMemory remote) {
        long size = local.segment().byteSize();
        for (long n : SIZES) {
            MemorySegment src = local.segment().asSlice(5, n);
            TransferStatus w = initiator.transfer(TransferRequest.builder(Opcode.WRITE, src, segment, remote.address() + 9)
                    .require(transport).build());
            assertEquals(TransferState.COMPLETED, w.state(), w.message());
            assertEquals(TargetProcess.crc(src), TargetProcess.crc(remote.segment().asSlice(9, n)), "WRITE of " + n);

            MemorySegment dst = local.segment().asSlice(size - n - 1, n);
            TransferStatus r = initiator.transfer(TransferRequest.builder(Opcode.READ, dst, segment, remote.address() + 17)
                    .require(transport).build());
            assertEquals(TransferState.COMPLETED, r.state(), r.message());
            assertEquals(TargetProcess.crc(remote.segment().asSlice(17, n)), TargetProcess.crc(dst), "READ of " + n);
        }
    }

    @Test
    void aPluginBuiltAgainstTheBuildersDescribesAForeignNameAndMovesCrcCheckedBytes() throws Exception {
        String id = "buildershape";
        assertThrows(ClassNotFoundException.class, () -> Class.forName("org.tent4j.compat.buildershape.BuilderShapeTransportProvider"),
                "the builder-shape plugin must come only from its jar, never from the test class path");
        URLClassLoader loader = open(pluginLoader("builder-shape-transport"));
        TransportProvider provider = ServiceLoader.load(TransportProvider.class, loader).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals(id)).findFirst().orElseThrow();
        TransportCapabilities caps = provider.capabilities(); // TransportCapabilities.builder(), from a2dd85c's bytecode
        assertEquals(32 << 10, caps.maxSliceSize());
        assertEquals(45, caps.rank());

        TransferEngine target = open(withContextLoader(loader, () -> TransferEngine.create(
                TransferEndToEndTest.cfg().set("transports.enabled", id).build())));
        TransferEngine initiator = open(withContextLoader(loader, () -> TransferEngine.create(
                TransferEndToEndTest.cfg().set("transports.enabled", id).build())));
        long size = (1L << 20) + 64;
        RegisteredMemory remote = target.allocate(size, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(size, Location.CPU, Permission.READ_WRITE);
        TargetProcess.pattern(local.segment(), 31);
        TargetProcess.pattern(remote.segment(), 32);
        // not a name the runtime's directory knows: the plugin resolves it, building the descriptor and its buffers
        movesIntactBytes(initiator, initiator.openSegment("alias:" + target.segmentName()), id, local, remote);
    }

    private <T extends AutoCloseable> T open(T c) {
        open.add(c);
        return c;
    }

    /** The runtime finds transports through the context class loader, as an application server would set it. */
    private static <T> T withContextLoader(ClassLoader loader, Supplier<T> action) {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(loader);
        try {
            return action.get();
        } finally {
            thread.setContextClassLoader(previous);
        }
    }
}
