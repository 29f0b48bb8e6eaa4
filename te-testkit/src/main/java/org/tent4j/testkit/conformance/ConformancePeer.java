package org.tent4j.testkit.conformance;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.StringJoiner;

import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.TransportProvider;

/**
 * The peer of {@link TransportConformance}'s cross-process cases: a JVM that runs the transport under test as segment
 * {@value #SEGMENT}, registers one buffer filled with {@link BytePattern} seed {@value #SEED}, publishes what the
 * transport published, and answers the parent on stdin/stdout:
 * <pre>
 *   &gt; (start)                     &lt; @@ DESCRIPTOR address length segmentAttributes bufferAttributes
 *   &gt; CRC offset length           &lt; @@ CRC hex
 *   &gt; EXIT (or stdin closes)      &lt; @@ BYE, then the transport closes and the JVM exits
 * </pre>
 * Attributes travel as {@code k=v&k=v} with URL-encoded keys and values ({@code -} when empty). Anything else the
 * transport prints is ignored by the parent, which reads only lines starting {@value #PREFIX}.
 *
 * <p>Arguments: provider class, machine id, buffer size, transfer timeout in ms, then {@code name=value} options.
 */
public final class ConformancePeer {
    static final String PREFIX = "@@ ";
    static final String SEGMENT = "peer";
    static final long SEED = 0x5EED_CAFEL;

    private ConformancePeer() {
    }

    /**
     * Runs the peer until the parent says EXIT or closes stdin.
     *
     * @param args provider class, machine id, buffer size, transfer timeout in ms, then {@code name=value} options
     * @throws Exception when the transport fails to start; the JVM then exits non-zero
     */
    public static void main(String[] args) throws Exception {
        TransportProvider provider = load(args[0]);
        String machine = args[1];
        long size = Long.parseLong(args[2]);
        Duration timeout = Duration.ofMillis(Long.parseLong(args[3]));
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            options.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        PrintStream out = System.out;
        int status = 0;
        try (TransportUnderTest side = new TransportUnderTest(provider, SEGMENT, machine, options, timeout)) {
            TransportUnderTest.Region region = side.allocate(size, Permission.READ_WRITE);
            BytePattern.fill(region.segment(), 0, size, SEED);
            BufferDescriptor buffer = region.descriptor();
            out.println(PREFIX + "DESCRIPTOR " + buffer.address() + " " + buffer.length() + " "
                    + encode(side.transport.segmentAttributes()) + " " + encode(buffer.attributes(side.transportId)));
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                String[] f = line.strip().split(" ");
                if (f[0].equals("CRC")) {
                    long crc = BytePattern.crc32c(region.segment(), Long.parseLong(f[1]), Long.parseLong(f[2]));
                    out.println(PREFIX + "CRC " + Long.toHexString(crc));
                } else if (f[0].equals("EXIT")) {
                    break;
                }
            }
            out.println(PREFIX + "BYE");
        } catch (Throwable t) {
            t.printStackTrace();
            status = 2;
        }
        // a transport thread that is not a daemon must not keep the peer alive after the parent is done with it
        System.exit(status);
    }

    /** By class name (works for providers a test declares without a services file), else by id. */
    private static TransportProvider load(String className) throws ReflectiveOperationException {
        for (TransportProvider p : ServiceLoader.load(TransportProvider.class)) {
            if (p.getClass().getName().equals(className)) {
                return p;
            }
        }
        return (TransportProvider) Class.forName(className).getConstructor().newInstance();
    }

    static String encode(Map<String, String> attributes) {
        if (attributes.isEmpty()) {
            return "-";
        }
        StringJoiner j = new StringJoiner("&");
        attributes.forEach((k, v) -> j.add(URLEncoder.encode(k, StandardCharsets.UTF_8) + "="
                + URLEncoder.encode(v, StandardCharsets.UTF_8)));
        return j.toString();
    }

    static Map<String, String> decode(String text) {
        Map<String, String> out = new LinkedHashMap<>();
        if (text.equals("-")) {
            return out;
        }
        for (String pair : text.split("&")) {
            int eq = pair.indexOf('=');
            out.put(URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                    URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        }
        return out;
    }
}
