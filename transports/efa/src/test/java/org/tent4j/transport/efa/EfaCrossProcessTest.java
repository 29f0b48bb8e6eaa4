package org.tent4j.transport.efa;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * Two processes: {@link EfaTargetMain} in a second JVM registers a patterned buffer and prints its descriptor; this JVM
 * builds the descriptor from that text alone, READs every size class and checks the bytes against the pattern, WRITEs
 * every size class (and 64 MiB as 16 concurrent slices) and has the target verify the checksums.
 */
class EfaCrossProcessTest {
    private static final long SEED = 77;
    private static final long SPAN = (64L << 20) + (64 << 10);
    private static final long[] SIZES = {1, 4095, 64 << 10, 64 << 20};

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp;ofi_rxm", "shm"})
    void readAndWriteAnotherProcess(String provider) throws Exception {
        EfaPair.assumeProvider(provider);
        EfaTransportProvider p = new EfaTransportProvider();
        try (ChildJvm child = new ChildJvm(EfaTargetMain.class, Map.of(), provider, Long.toString(SPAN),
                Long.toString(SEED));
             TestTransportContext ctx = new TestTransportContext("a", EfaPair.MACHINE, EfaTransportProvider.ID,
                     p.options(), Map.of(EfaTransportProvider.OPT_PROVIDER, provider), Duration.ofSeconds(30));
             Arena arena = Arena.ofShared()) {
            Map<String, String> seg = new HashMap<>();
            Map<String, String> buf = new HashMap<>();
            for (String line = child.next(60); !line.equals("ready"); line = child.next(60)) {
                if (line.startsWith("seg ")) {
                    String kv = line.substring(4);
                    seg.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
                } else if (line.startsWith("buffer ")) {
                    for (String kv : line.substring(7).split(" ")) {
                        buf.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
                    }
                }
            }
            assertEquals(provider, seg.get(EfaAttributes.PROVIDER));
            long address = Long.parseUnsignedLong(buf.get("address").substring(2), 16);
            BufferDescriptor remote = BufferDescriptor.builder().address(address)
                    .length(Long.parseLong(buf.get("length"))).location(Location.CPU)
                    .permission(Permission.READ_WRITE).transports(List.of(EfaTransportProvider.ID))
                    .attributes(Map.of(EfaTransportProvider.ID, Map.of(EfaAttributes.KEY, buf.get("key"), EfaAttributes.BASE, buf.get("base"))))
                    .build();
            SegmentDescriptor target = SegmentDescriptor.builder().name("target").machineId(EfaPair.MACHINE)
                    .host("127.0.0.1").controlPort(0).transports(List.of(EfaTransportProvider.ID))
                    .transportAttributes(Map.of(EfaTransportProvider.ID, seg)).buffers(List.of(remote)).version(1)
                    .build();

            MemorySegment expected = arena.allocate(SPAN, 4096);
            EfaPair.fill(expected, SEED);
            Transport t = p.create(ctx);
            try {
                MemorySegment mem = arena.allocate(SPAN, 4096);
                TestLocalMemory.Buffer local = ctx.memory().register(mem, Permission.READ_WRITE);
                t.registerBuffer(local).orElseThrow();
                EfaPair.Registered l = new EfaPair.Registered(local, Map.of(), null);
                PeerConnection c = t.connect(target);
                int round = 0;
                for (long size : SIZES) {
                    round++;
                    long localOff = 3 + round;
                    long remoteOff = 1 + 11L * round;
                    TestSlice read = EfaPair.slice(Opcode.READ, l, localOff, remote, remoteOff, size);
                    c.post(read);
                    EfaPair.awaitDone(read);
                    assertEquals(EfaPair.crc(expected.asSlice(remoteOff, size)), EfaPair.crc(mem.asSlice(localOff, size)),
                            provider + " READ " + size + " bytes from the other process");

                    EfaPair.fill(mem, 1000 + round);
                    long writeOff = remoteOff + 7;
                    TestSlice write = EfaPair.slice(Opcode.WRITE, l, localOff, remote, writeOff, size);
                    c.post(write);
                    EfaPair.awaitDone(write);
                    child.send("verify " + writeOff + " " + size + " " + EfaPair.crc(mem.asSlice(localOff, size)));
                    assertEquals("ok", child.next(30), provider + " WRITE " + size + " bytes into the other process");
                    // what the target now holds, for the next READ
                    expected.asSlice(writeOff, size).copyFrom(mem.asSlice(localOff, size));
                }

                // 64 MiB as the runtime would slice it: 16 concurrent 4 MiB slices
                EfaPair.fill(mem, 4242);
                List<TestSlice> slices = new ArrayList<>();
                long chunk = 4L << 20;
                for (int i = 0; i < 16; i++) {
                    slices.add(EfaPair.slice(Opcode.WRITE, l, 5 + i * chunk, remote, 9 + i * chunk, chunk));
                }
                slices.forEach(c::post);
                slices.forEach(EfaPair::awaitDone);
                child.send("verify 9 " + (16 * chunk) + " " + EfaPair.crc(mem.asSlice(5, 16 * chunk)));
                assertEquals("ok", child.next(30), provider + " 16 concurrent 4 MiB WRITEs");
                c.close();
            } finally {
                t.close();
            }
            child.send("exit");
            assertEquals(0, child.exitCode(30), "the target process verified every WRITE and exited cleanly");
        }
    }
}
