package org.tent4j.cli.bench;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import picocli.CommandLine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** file-bench end to end on a small file: lays it out, runs each pattern, reports without errors. */
class FileBenchTest {
    @TempDir
    Path dir;

    private record Run(int status, String out, String err) {
    }

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new FileBench()).setCaseInsensitiveEnumValuesAllowed(true);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        return new Run(cl.execute(args), out.toString(), err.toString());
    }

    @Test
    void everyPatternRunsOverAFileSegment() throws Exception {
        Path f = dir.resolve("bench.bin");
        for (String rw : new String[]{"write", "read", "randwrite", "randread"}) {
            Run r = run("--file=" + f, "--size=8m", "--rw=" + rw, "--bs=64k", "--iodepth=4", "--runtime=0.3", "--warmup=0",
                    "--json");
            assertEquals(0, r.status(), r.out() + r.err());
            assertTrue(r.out().contains("file-bench: " + rw + " ") && r.out().contains(", 0 errors"), r.out());
            assertTrue(r.out().contains("\"errors\":0"), r.out());
        }
        assertEquals(8 << 20, Files.size(f));
    }

    /** remote file segments (issue 12): the file owned by a second engine over tcp, and that engine's memory. */
    @Test
    void aRemoteFileAndRemoteMemoryRunOverTcp() {
        Path f = dir.resolve("remote.bin");
        for (String via : new String[]{"tcp", "tcp-memory"}) {
            for (String rw : new String[]{"write", "randread"}) {
                Run r = run("--file=" + f, "--size=8m", "--rw=" + rw, "--bs=64k", "--iodepth=4", "--runtime=0.3",
                        "--warmup=0", "--via=" + via);
                assertEquals(0, r.status(), r.out() + r.err());
                assertTrue(r.out().contains(" via " + via + " ") && r.out().contains(", 0 errors"), r.out());
            }
        }
        Run bad = run("--file=" + f, "--size=8m", "--via=nfs");
        assertEquals(2, bad.status());
        assertTrue(bad.err().contains("--via must be local, tcp or tcp-memory, got nfs"), bad.err());
    }

    @Test
    void badFlagsExitWithTwo() {
        Run r = run("--file=" + dir.resolve("x"), "--size=4k", "--bs=1m");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--size >= --bs"), r.err());
    }
}
