package org.tent4j.cli.store;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tent4j store scrub --disk-dir DIR}: asks the node running on DIR (through its control socket,
 * {@link NodeControl}) to scrub its disk segment now, and prints its report.
 */
@Command(name = "scrub", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = {"Asks the running 'store node --disk-dir DIR' to scrub its disk segment now (after any scrub in "
                + "progress) and prints the report: 'MISMATCH key '<key>' file <file> offset <offset> length <length>: "
                + "<reason>' for each disk replica whose bytes do not match their CRC32C (the master drops it), then "
                + "'SCRUB <file>: <n> disk replicas checked, <n> corrupt, <n> dropped'.",
                "Talks to the node through the Unix socket DIR/" + NodeControl.SOCKET + ", so it runs on the node's "
                        + "host as the node's user.",
                "Exit status: 0 all intact, 1 corrupt replicas found or the scrub failed, 2 bad arguments or no node on DIR."})
public final class ScrubCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"--disk-dir", "--disk_dir"}, required = true, paramLabel = "DIR",
            description = "The node's --disk-dir.")
    Path diskDir;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Path socket = NodeControl.socket(diskDir);
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            try {
                ch.connect(UnixDomainSocketAddress.of(socket));
            } catch (IOException e) {
                err.println("tent4j store scrub: no node serves " + diskDir + ": cannot connect to " + socket + " ("
                        + e.getMessage() + "); is 'tent4j store node --disk-dir " + diskDir + "' running here?");
                return 2;
            }
            ch.write(ByteBuffer.wrap("scrub\n".getBytes(StandardCharsets.UTF_8)));
            boolean mismatch = false;
            boolean summary = false;
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                out.println(line);
                mismatch |= line.startsWith("MISMATCH ");
                summary = line.startsWith("SCRUB ");
            }
            out.flush();
            return summary && !mismatch ? 0 : 1;
        } catch (IOException e) {
            err.println("tent4j store scrub: the node on " + diskDir + " broke off: " + e.getMessage());
            return 1;
        }
    }
}
