package org.tent4j.runtime.memory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalFile;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** File registrations: where files land in the address space, which transports see them, and bad input. */
class FileSegmentsTest {
    private static final long GIB = 1L << 30;

    @TempDir
    Path dir;

    /** Serves files when {@code serves}, records what it was told. */
    private static final class FileTransport implements Transport {
        final boolean serves;
        final List<String> events = new ArrayList<>();

        FileTransport(boolean serves) {
            this.serves = serves;
        }

        @Override public String id() { return serves ? "files" : "memory-only"; }
        @Override public PeerConnection connect(SegmentDescriptor peer) { throw new UnsupportedOperationException(); }
        @Override public void close() { }

        @Override
        public Optional<Map<String, String>> registerFile(LocalFile file) {
            events.add("register " + file.path().getFileName() + " " + file.length());
            return serves ? Optional.of(Map.of("path", file.path().toString())) : Optional.empty();
        }

        @Override
        public void unregisterFile(LocalFile file) {
            events.add("unregister " + file.path().getFileName());
        }
    }

    private static TransportSlot[] slots(Transport... ts) {
        TransportSlot[] out = new TransportSlot[ts.length];
        for (int i = 0; i < ts.length; i++) {
            out[i] = new TransportSlot(i, ts[i].id(), null, TransportCapabilities.builder()
                    .memoryPath(MemoryKind.CPU, MemoryKind.FILE).sameHostOnly(true).maxSliceSize(1 << 20).rank(0).build(), ts[i]);
        }
        return out;
    }

    @Test
    void filesGetDisjointNeverReusedRangesAboveMemoryAndOnlyFileTransportsListThem() throws Exception {
        FileTransport files = new FileTransport(true);
        FileTransport memory = new FileTransport(false);
        TransportSlot[] slots = slots(memory, files);
        FileSegments segments = new FileSegments();
        RegisteredFileBuffer a = segments.register(dir.resolve("a"), 3 * GIB + 1, Permission.READ_WRITE, slots);
        RegisteredFileBuffer b = segments.register(dir.resolve("b"), 10, Permission.READ_ONLY, slots);
        assertEquals(FileSegments.BASE, a.address());
        assertTrue(b.address() >= a.address() + a.length() + GIB, "a GiB gap at least");
        assertEquals(3 * GIB + 1, Files.size(a.path()), "created sparse at the size asked");
        List<BufferDescriptor> published = new ArrayList<>();
        segments.describe(published, slots);
        assertEquals(2, published.size());
        for (BufferDescriptor d : published) {
            assertEquals(Location.FILE, d.location());
            assertEquals(List.of("files"), d.transports());
            assertEquals(Map.of("files", Map.of("path", dir.resolve(d.address() == a.address() ? "a" : "b").toString())), d.attributes());
        }
        segments.unregister(b, "engine", slots);
        assertEquals(List.of("register b 10", "unregister b"), files.events.subList(1, 3));
        assertEquals(List.of("register a " + (3 * GIB + 1), "register b 10"), memory.events, "memory-only transports are not told of unregistering");
        RegisteredFileBuffer c = segments.register(dir.resolve("b"), 0, Permission.READ_ONLY, slots);
        assertTrue(c.address() > b.address(), "a base is never handed out twice");
        TransferException twice = assertThrows(TransferException.class, () -> segments.unregister(b, "engine", slots));
        assertTrue(twice.getMessage().contains("not registered with engine 'engine'"), twice.getMessage());
    }

    @Test
    void badInputAndNoServingTransportAreRefusedWithThePathNamed() throws Exception {
        FileSegments segments = new FileSegments();
        TransportSlot[] none = slots(new FileTransport(false));
        Path p = dir.resolve("x");
        TransferException e = assertThrows(TransferException.class, () -> segments.register(p, 100, Permission.READ_WRITE, none));
        assertTrue(e.getMessage().contains(p.toString()) && e.getMessage().contains("no running transport serves files"), e.getMessage());
        TransportSlot[] ok = slots(new FileTransport(true));
        for (Runnable bad : List.<Runnable>of(
                () -> segments.register(dir.resolve("y"), 100, Permission.LOCAL_ONLY, ok),
                () -> segments.register(dir.resolve("missing"), 0, Permission.READ_ONLY, ok),
                () -> segments.register(dir, 0, Permission.READ_ONLY, ok),
                () -> segments.register(dir.resolve("z"), -1, Permission.READ_ONLY, ok))) {
            TransferException t = assertThrows(TransferException.class, bad::run);
            assertTrue(t.getMessage().contains(dir.toString()), t.getMessage());
        }
        segments.register(dir.resolve("w"), 100, Permission.READ_WRITE, ok);
        TransferException dup = assertThrows(TransferException.class,
                () -> segments.register(dir.resolve("sub/../w"), 0, Permission.READ_WRITE, ok));
        assertTrue(dup.getMessage().contains("already registered"), dup.getMessage());
    }
}
