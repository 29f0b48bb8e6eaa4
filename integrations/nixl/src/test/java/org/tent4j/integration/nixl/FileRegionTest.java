package org.tent4j.integration.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.integration.nixl.AgentTest.crc;
import static org.tent4j.integration.nixl.AgentTest.fill;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.Opcode;

/**
 * FILE regions NIXL-style (devId = an open fd of this process, address = offset) on real engines over tcp: DRAM to a
 * peer's file and back, DRAM to the agent's own file (loopback), and bad regions refused naming fd, file and range.
 */
class FileRegionTest {
    private static final int O_RDWR = 2;
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle PIPE;

    static {
        Linker linker = Linker.nativeLinker();
        OPEN = linker.downcallHandle(linker.defaultLookup().find("open").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                Linker.Option.firstVariadicArg(2));
        CLOSE = linker.downcallHandle(linker.defaultLookup().find("close").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        PIPE = linker.downcallHandle(linker.defaultLookup().find("pipe").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
    }

    private final List<Agent> agents = new ArrayList<>();
    private final List<Integer> fds = new ArrayList<>();
    private final Arena arena = Arena.ofShared();
    @TempDir
    Path dir;

    private Agent agent(String name) {
        Agent a = Agent.create(AgentConfig.of(name, AgentTest.engineConfig()));
        a.createBackend("tent4j", Map.of());
        agents.add(a);
        return a;
    }

    /** An fd the way a NIXL caller has one: opened by the process, not by the agent. */
    private int open(Path file) throws Throwable {
        return open(file, O_RDWR);
    }

    private int open(Path file, int flags) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(a.allocateFrom(file.toString()), flags, 0);
            assertTrue(fd >= 0, "open " + file);
            fds.add(fd);
            return fd;
        }
    }

    private Path sizedFile(String name, long size) throws IOException {
        Path p = dir.resolve(name);
        try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
            f.setLength(size);
        }
        return p;
    }

    private static long fileCrc(Path file, long offset, int length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(length);
            ByteBuffer b = s.asByteBuffer();
            while (b.hasRemaining() && ch.read(b, offset + b.position()) >= 0) {
                // positional reads until full
            }
            return crc(s);
        }
    }

    @AfterEach
    void tearDown() throws Throwable {
        agents.forEach(Agent::close);
        arena.close();
        for (int fd : fds) {
            int rc = (int) CLOSE.invokeExact(fd);
            assertEquals(0, rc);
        }
    }

    private static void finish(XferRequest r) throws InterruptedException {
        assertEquals(XferState.DONE, r.await(Duration.ofSeconds(10)), () -> String.valueOf(r.error()));
    }

    @Test
    void dramGoesToAPeersFileAndBack() throws Throwable {
        Agent a = agent("a");
        Agent b = agent("b");
        int size = 1 << 20;
        Path file = sizedFile("b.dat", 4L * size);
        int fd = open(file);
        // b registers 3 MiB of its file starting at 512 KiB
        long base = 512 << 10;
        b.registerMem(DescriptorList.of(MemoryType.FILE, new Descriptor(base, 3L * size, fd)));
        MemorySegment src = arena.allocate(size, 4096);
        MemorySegment back = arena.allocate(size, 4096);
        fill(src, 11);
        a.registerMem(DescriptorList.dram(src, back));
        assertEquals("b", a.loadRemoteMD(b.getLocalMD()));

        long at = base + size + 4096;
        XferRequest w = a.createXferReq(Opcode.WRITE, DescriptorList.dram(src),
                DescriptorList.of(MemoryType.FILE, new Descriptor(at, size, fd)), "b", XferOptions.NONE);
        assertEquals("tent4j", w.backend());
        w.post();
        finish(w);
        w.release();
        assertEquals(crc(src), fileCrc(file, at, size));

        XferRequest r = a.createXferReq(Opcode.READ, DescriptorList.dram(back),
                DescriptorList.of(MemoryType.FILE, new Descriptor(at, size, fd)), "b", XferOptions.NONE);
        r.post();
        finish(r);
        r.release();
        assertEquals(crc(src), crc(back));

        // a peer's file range outside what it registered is refused before any byte moves
        NixlException e = assertThrows(NixlException.class, () -> a.createXferReq(Opcode.WRITE, DescriptorList.dram(src.asSlice(0, 4096)),
                DescriptorList.of(MemoryType.FILE, new Descriptor(base + 3L * size - 100, 4096, fd)), "b", XferOptions.NONE));
        assertEquals(NixlStatus.NOT_FOUND, e.status(), e.getMessage());
        assertTrue(e.getMessage().contains("agent 'b' descriptor 0 (0x" + Long.toHexString(base + 3L * size - 100) + "+4096@" + fd
                + ") not registered with it"), e.getMessage());
    }

    @Test
    void dramGoesToTheAgentsOwnFileInLoopback() throws Throwable {
        Agent a = agent("a");
        int size = 256 << 10;
        Path file = sizedFile("a.dat", 2L * size);
        int fd = open(file);
        // two regions of one file: they share one engine registration
        DescriptorList first = DescriptorList.of(MemoryType.FILE, new Descriptor(0, size, fd));
        DescriptorList second = DescriptorList.of(MemoryType.FILE, new Descriptor(size, size, fd));
        a.registerMem(first);
        a.registerMem(second);
        MemorySegment src = arena.allocate(size, 4096);
        MemorySegment back = arena.allocate(size, 4096);
        fill(src, 21);
        a.registerMem(DescriptorList.dram(src, back));

        DescriptorList target = DescriptorList.blocks(MemoryType.FILE, size, size / 4, 4, fd);
        DescriptorList from = DescriptorList.blocks(MemoryType.DRAM, src.address(), size / 4, 4, 0);
        XferRequest w = a.createXferReq(Opcode.WRITE, from, target, "a", XferOptions.NONE);
        w.post();
        finish(w);
        w.release();
        assertEquals(crc(src), fileCrc(file, size, size));

        XferRequest r = a.createXferReq(Opcode.READ, DescriptorList.blocks(MemoryType.DRAM, back.address(), size / 4, 4, 0), target, "a",
                XferOptions.NONE);
        r.post();
        finish(r);
        r.release();
        assertEquals(crc(src), crc(back));

        // a file is a target only
        NixlException e = assertThrows(NixlException.class, () -> a.createXferReq(Opcode.WRITE, target,
                DescriptorList.blocks(MemoryType.DRAM, back.address(), size / 4, 4, 0), "a", XferOptions.NONE));
        assertTrue(e.getMessage().contains("FILE fd " + fd + " (" + file.toRealPath() + ") can only be a target"), e.getMessage());

        // the other region of the file going keeps this one working
        a.deregisterMem(first);
        fill(src, 22);
        XferRequest again = a.createXferReq(Opcode.WRITE, from, target, "a", XferOptions.NONE);
        again.post();
        finish(again);
        again.release();
        assertEquals(crc(src), fileCrc(file, size, size));

        // the last region gone, the range is unreachable and the file free to register again
        a.deregisterMem(second);
        e = assertThrows(NixlException.class, () -> a.createXferReq(Opcode.WRITE, from, target, "a", XferOptions.NONE));
        assertEquals(NixlStatus.NOT_FOUND, e.status(), e.getMessage());
        a.registerMem(second);
    }

    @Test
    void badFileRegionsAreRefusedNamingFdFileAndRange() throws Throwable {
        Agent a = agent("a");
        Path file = sizedFile("small.dat", 8192);
        int fd = open(file);
        String path = file.toRealPath().toString();

        refused(a, MemoryType.FILE, new Descriptor(4096, 8192, fd),
                "FILE fd " + fd + " (" + path + "): offset 4096 length 8192 runs past its end (8192 bytes); size the file first");
        refused(a, MemoryType.FILE, new Descriptor(0, 4096, 1 << 20), "FILE fd " + (1 << 20) + ": no such open file descriptor in this process");
        refused(a, MemoryType.FILE, new Descriptor(0, 4096, -1), "FILE fd -1: devId must be an open file descriptor");
        refused(a, MemoryType.BLK, new Descriptor(0, 4096, fd), "BLK fd " + fd + " (" + path + ") is not a block device");
        int dirFd = open(dir, 0); // O_RDONLY: a directory opens read-only
        refused(a, MemoryType.FILE, new Descriptor(0, 4096, dirFd), "FILE fd " + dirFd + " (" + dir.toRealPath() + ") is not a regular file");

        int pipeFd;
        try (Arena p = Arena.ofConfined()) {
            MemorySegment ends = p.allocate(ValueLayout.JAVA_INT, 2);
            assertEquals(0, (int) PIPE.invokeExact(ends));
            pipeFd = ends.getAtIndex(ValueLayout.JAVA_INT, 0);
            fds.add(pipeFd);
            fds.add(ends.getAtIndex(ValueLayout.JAVA_INT, 1));
        }
        refused(a, MemoryType.FILE, new Descriptor(0, 4096, pipeFd), "FILE fd " + pipeFd + " is pipe:[");

        // regions of one file share its registration at the size it had then, through any fd of it
        a.registerMem(DescriptorList.of(MemoryType.FILE, new Descriptor(0, 4096, fd)));
        int again = open(file);
        a.registerMem(DescriptorList.of(MemoryType.FILE, new Descriptor(4096, 4096, again)));
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(16384);
        }
        refused(a, MemoryType.FILE, new Descriptor(8192, 4096, fd),
                "FILE fd " + fd + " (" + path + "): offset 8192 length 4096 runs past its end (8192 bytes when its first region was registered)");

        // a removed file's fd no longer names a path an engine could open
        Path gone = sizedFile("gone.dat", 4096);
        int goneFd = open(gone);
        Files.delete(gone);
        refused(a, MemoryType.FILE, new Descriptor(0, 4096, goneFd), "FILE fd " + goneFd + ": no such open file descriptor in this process, or its file was removed");
    }

    private static void refused(Agent a, MemoryType type, Descriptor d, String fragment) {
        NixlException e = assertThrows(NixlException.class, () -> a.registerMem(DescriptorList.of(type, d)));
        assertEquals(NixlStatus.BACKEND, e.status(), e.getMessage());
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }
}
