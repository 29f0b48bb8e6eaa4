package org.tent4j.transport.nvmeof;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/**
 * The other process of {@link FileSegmentCrossProcessTest}: an engine (peer-to-peer metadata) that registers a file
 * filled with a known pattern (with the transports named by the optional second argument, default nvmeof), prints {@code READY <segment> <address>}, then answers {@code CRC <offset> <length>}
 * lines ({@code CRC <crc>} or {@code CRC ERROR <status>}) by reading its own file through its engine, until {@code EXIT}.
 * Its answers share stdout with the log; the test skips the log lines.
 */
public final class FileOwnerProcess {
    private FileOwnerProcess() {
    }

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        byte[] content = new byte[8 << 20];
        new Random(5).nextBytes(content);
        Files.write(file, content);
        try (TransferEngine e = TransferEngine.create(EngineConfig.builder()
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, args.length > 1 ? args[1] : "nvmeof")
                .set(EngineConfig.WORKERS, 2)
                .build())) {
            RegisteredFile f = e.registerFile(file, 0, Permission.READ_WRITE);
            RegisteredMemory m = e.allocate(8 << 20, Location.CPU, Permission.READ_WRITE);
            System.out.println("READY " + e.segmentName() + " " + f.address());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                if (w[0].equals("EXIT")) {
                    break;
                }
                if (!w[0].equals("CRC")) {
                    continue;
                }
                MemorySegment dst = m.segment().asSlice(0, Long.parseLong(w[2]));
                TransferStatus s = e.transfer(TransferRequest.read(dst, e.localSegment(), f.address() + Long.parseLong(w[1])));
                System.out.println("CRC " + (s.state() == TransferState.COMPLETED ? FileSegmentEngineTest.crc(dst) : "ERROR " + s));
            }
        }
    }
}
