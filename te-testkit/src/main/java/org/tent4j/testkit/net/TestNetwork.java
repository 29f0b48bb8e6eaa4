package org.tent4j.testkit.net;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Assumptions;

/**
 * Many hosts on one machine: each {@link Host} a network namespace ({@link #addHost}), joined by {@link Link}s ({@link #addLink}) (a veth pair between two
 * hosts, or a bridge in a namespace of its own for more), each link with its own subnet of 198.51.100.0/24 (a
 * documentation range) and its faults: {@link Link#down() down}, {@link Link#drop silent drops} per direction and
 * {@link Link#loss random loss} (nftables in the receiving host), and a {@link Link#rate rate limit} ({@code tc tbf}).
 * Nothing is made in the root namespace: no address, route, NAT or bridge there, so traffic only flows between the
 * namespaces this network made. The test JVM itself stays in the root namespace; it reaches the hosts only through
 * processes it starts inside them ({@link Host#jvm}, {@link Host#exec}).
 *
 * <p>Names carry a run id ({@code t4j-<pid>-<n>-<host>}); {@link #close()} deletes the namespaces (and with them
 * their interfaces and nftables tables) after killing what still runs inside them; a JVM shutdown hook does the same
 * for networks left open (a test JVM stopped with SIGTERM); {@link #create()} first sweeps namespaces whose pid is no
 * longer alive (a test JVM that was killed). Where namespaces cannot be made (not Linux, not root, no {@code ip},
 * {@code nft} or {@code tc}, or the kernel refuses), {@link #create()} skips the test with the reason.
 */
public final class TestNetwork implements AutoCloseable {
    /** Every name this class makes starts with it. */
    public static final String PREFIX = "t4j-";
    private static final Pattern OURS = Pattern.compile("^" + PREFIX + "(\\d+)-.*");
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9]{0,11}");
    private static final long PID = ProcessHandle.current().pid();
    private static final AtomicInteger RUNS = new AtomicInteger();
    private static final Set<TestNetwork> OPEN = ConcurrentHashMap.newKeySet();
    private static final int MAX_LINKS = 16;
    private static final int MAX_HOSTS_PER_LINK = 14;
    private static final Path NETNS_DIR = Path.of("/run/netns");
    private static final int MNT_DETACH = 2;
    private static final MethodHandle UMOUNT2 = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("umount2").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static String ip;
    private static String nft;
    private static String tc;
    private static String unavailable;
    private static boolean checked;

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (TestNetwork n : OPEN) {
                n.close();
            }
        }, "tent4j-testkit-network-reaper"));
    }

    private final String runId;
    private final Map<String, Host> hosts = new LinkedHashMap<>();
    private final Map<String, Link> links = new LinkedHashMap<>();
    private final List<String> namespaces = new ArrayList<>();
    private boolean closed;

    private TestNetwork() {
        this.runId = PREFIX + PID + "-" + RUNS.getAndIncrement();
    }

    /**
     * A new, empty network, after sweeping stale ones of dead JVMs; skips the calling test (a JUnit assumption) with
     * {@link #unavailableReason()} where namespaces cannot be made.
     *
     * @return the network; close it
     */
    public static TestNetwork create() {
        String why = unavailableReason();
        Assumptions.assumeTrue(why == null, why);
        sweepStale();
        TestNetwork n = new TestNetwork();
        OPEN.add(n);
        return n;
    }

    /**
     * Why this machine cannot build a test network, or null where it can. Checked once per JVM.
     *
     * @return the reason, or {@code null}
     */
    public static synchronized String unavailableReason() {
        if (!checked) {
            checked = true;
            unavailable = check();
        }
        return unavailable;
    }

    private static String check() {
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
            return "TestNetwork needs Linux network namespaces; this is " + System.getProperty("os.name");
        }
        String uid = effectiveUid();
        if (!"0".equals(uid)) {
            return "TestNetwork needs root to make network namespaces; this JVM runs as uid " + uid;
        }
        ip = locate("ip");
        nft = locate("nft");
        tc = locate("tc");
        if (ip == null || tc == null) {
            return "TestNetwork needs `ip` and `tc` (Debian package iproute2) on PATH, /usr/sbin or /sbin";
        }
        if (nft == null) {
            return "TestNetwork needs `nft` (Debian package nftables; scripts/install-deps.sh installs it)";
        }
        String probe = PREFIX + PID + "-probe";
        try {
            run(List.of(ip, "netns", "add", probe));
            run(List.of(ip, "netns", "delete", probe));
        } catch (RuntimeException e) {
            return "TestNetwork cannot make a network namespace here: " + e.getMessage();
        }
        return null;
    }

    private static String effectiveUid() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return line.split("\\s+")[2];
                }
            }
        } catch (IOException e) {
            return "unknown (" + e + ")";
        }
        return "unknown";
    }

    private static String locate(String binary) {
        List<String> dirs = new ArrayList<>(List.of(System.getenv().getOrDefault("PATH", "").split(":")));
        dirs.addAll(List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin"));
        for (String d : dirs) {
            Path p = Path.of(d.isEmpty() ? "." : d, binary);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    /**
     * Deletes the namespaces of earlier runs whose JVM is gone (the pid in their name is not alive), killing what
     * still runs inside them. Their interfaces and nftables tables go with them: this class makes none outside its
     * namespaces.
     */
    public static void sweepStale() {
        for (String ns : namespaceNames()) {
            Matcher m = OURS.matcher(ns);
            if (m.matches() && ProcessHandle.of(Long.parseLong(m.group(1))).map(ProcessHandle::isAlive).orElse(false) == false) {
                deleteNamespace(ns);
            }
        }
    }

    /**
     * The names {@code ip netns list} shows now.
     *
     * @return the names
     */
    public static List<String> namespaceNames() {
        List<String> names = new ArrayList<>();
        for (String line : run(List.of(locateIp(), "netns", "list")).split("\n")) {
            if (!line.isBlank()) {
                names.add(line.trim().split("\\s+")[0]);
            }
        }
        return names;
    }

    private static String locateIp() {
        return ip != null ? ip : "ip";
    }

    /**
     * A new host: a namespace with its loopback up and no other interface until a link joins it ({@link #addLink}).
     *
     * @param name the host's name within this network
     * @return the host
     */
    public synchronized Host addHost(String name) {
        checkOpen();
        if (!NAME.matcher(name).matches() || hosts.containsKey(name)) {
            throw new IllegalArgumentException("host name must be new and match " + NAME + ": " + name);
        }
        String ns = runId + "-" + name;
        run(List.of(ip, "netns", "add", ns));
        namespaces.add(ns);
        run(List.of(ip, "-n", ns, "link", "set", "dev", "lo", "up"));
        Host h = new Host(this, name, ns);
        hosts.put(name, h);
        return h;
    }

    /**
     * The host made under this name.
     *
     * @param name the host's name
     * @return the host
     */
    public synchronized Host host(String name) {
        Host h = hosts.get(name);
        if (h == null) {
            throw new IllegalArgumentException("no host " + name + " in " + hosts.keySet());
        }
        return h;
    }

    /**
     * The link made under this name.
     *
     * @param name the link's name
     * @return the link
     */
    public synchronized Link link(String name) {
        Link l = links.get(name);
        if (l == null) {
            throw new IllegalArgumentException("no link " + name + " in " + links.keySet());
        }
        return l;
    }

    /**
     * A new link joining these hosts (two or more), up and without faults. Each host gets an interface named
     * {@code name} with the address {@code 198.51.100.(16 * i + j + 1)/28}, i the link's index, j the host's position.
     *
     * @param name    the link's name
     * @param members the hosts it joins
     * @return the link
     */
    public synchronized Link addLink(String name, Host... members) {
        checkOpen();
        if (!NAME.matcher(name).matches() || links.containsKey(name)) {
            throw new IllegalArgumentException("link name must be new and match " + NAME + ": " + name);
        }
        if (members.length < 2 || members.length > MAX_HOSTS_PER_LINK || Set.of(members).size() != members.length) {
            throw new IllegalArgumentException("a link joins 2 to " + MAX_HOSTS_PER_LINK + " distinct hosts");
        }
        if (links.size() == MAX_LINKS) {
            throw new IllegalStateException("at most " + MAX_LINKS + " links fit in 198.51.100.0/24");
        }
        int index = links.size();
        Map<Host, String> addresses = new LinkedHashMap<>();
        String bridgeNs = null;
        if (members.length == 2) {
            run(List.of(ip, "link", "add", "name", name, "netns", members[0].namespace(), "type", "veth",
                    "peer", "name", name, "netns", members[1].namespace()));
        } else {
            bridgeNs = runId + "-" + name;
            run(List.of(ip, "netns", "add", bridgeNs));
            namespaces.add(bridgeNs);
            run(List.of(ip, "-n", bridgeNs, "link", "add", "name", "br0", "type", "bridge"));
            run(List.of(ip, "-n", bridgeNs, "link", "set", "dev", "br0", "up"));
            for (Host h : members) {
                run(List.of(ip, "link", "add", "name", name, "netns", h.namespace(), "type", "veth",
                        "peer", "name", h.name(), "netns", bridgeNs));
                run(List.of(ip, "-n", bridgeNs, "link", "set", "dev", h.name(), "master", "br0", "up"));
            }
        }
        for (int j = 0; j < members.length; j++) {
            String address = "198.51.100." + (16 * index + j + 1);
            run(List.of(ip, "-n", members[j].namespace(), "addr", "add", address + "/28", "dev", name));
            run(List.of(ip, "-n", members[j].namespace(), "link", "set", "dev", name, "up"));
            addresses.put(members[j], address);
        }
        Link l = new Link(this, name, Collections.unmodifiableMap(addresses), bridgeNs);
        links.put(name, l);
        for (Host h : members) {
            h.joined(l);
        }
        return l;
    }

    /**
     * The hosts made so far.
     *
     * @return the hosts, in the order they were made
     */
    public synchronized List<Host> hosts() {
        return List.copyOf(hosts.values());
    }

    /**
     * The links made so far.
     *
     * @return the links, in the order they were made
     */
    public synchronized List<Link> links() {
        return List.copyOf(links.values());
    }

    /**
     * The run id every name of this network starts with ({@code t4j-<pid>-<n>}).
     *
     * @return the run id
     */
    public String runId() {
        return runId;
    }

    /**
     * The namespaces this network made, hosts' and bridges'.
     *
     * @return the namespace names
     */
    public synchronized List<String> namespaces() {
        return List.copyOf(namespaces);
    }

    /** Rewrites {@code host}'s nftables table from the faults of every link it is on. */
    synchronized void applyFilter(Host host) {
        StringBuilder rules = new StringBuilder();
        for (Link l : host.links()) {
            rules.append(l.inputRules(host));
        }
        String script = "table inet t4j\ndelete table inet t4j\n"
                + (rules.isEmpty() ? "" : "table inet t4j {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
                        + rules + " }\n}\n");
        run(List.of(ip, "netns", "exec", host.namespace(), nft, "-f", "-"), script);
    }

    synchronized void setLink(Host host, String ifname, boolean up) {
        run(List.of(ip, "-n", host.namespace(), "link", "set", "dev", ifname, up ? "up" : "down"));
    }

    synchronized void setRate(Host host, String ifname, long bitsPerSecond) {
        if (bitsPerSecond <= 0) {
            runAllowingFailure(List.of(ip, "netns", "exec", host.namespace(), tc, "qdisc", "del", "dev", ifname, "root"));
            return;
        }
        // 20 ms worth of bytes per burst (at least 16 KiB), and up to 100 ms of queue before tbf drops
        long burst = Math.max(16 << 10, bitsPerSecond / 8 / 50);
        run(List.of(ip, "netns", "exec", host.namespace(), tc, "qdisc", "replace", "dev", ifname, "root", "tbf",
                "rate", bitsPerSecond + "bit", "burst", Long.toString(burst), "latency", "100ms"));
    }

    /** Runs {@code command} inside {@code host}'s namespace and returns its output; fails on a non-zero exit. */
    String exec(Host host, List<String> command) {
        checkOpen();
        return run(prefix(host.namespace(), command));
    }

    String execAllowingFailure(Host host, List<String> command) {
        checkOpen();
        return exec(prefix(host.namespace(), command), null).output;
    }

    List<String> prefix(String namespace, List<String> command) {
        List<String> cmd = new ArrayList<>(List.of(ip, "netns", "exec", namespace));
        cmd.addAll(command);
        return cmd;
    }

    private synchronized void checkOpen() {
        if (closed) {
            throw new IllegalStateException(runId + " is closed");
        }
    }

    /**
     * Kills what runs inside this network's namespaces and deletes them, their interfaces and tables with them. A
     * second caller (the shutdown hook, while the test closes) waits until the first is done, so that a JVM stopping
     * does not halt midway.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<String> made = new ArrayList<>(namespaces);
        Collections.reverse(made);
        for (String ns : made) {
            deleteNamespace(ns);
        }
        OPEN.remove(this);
    }

    /**
     * Kills the processes inside {@code ns} and deletes it as {@code ip netns delete} does (a lazy unmount of its
     * /run/netns file, then the file), without starting a process: a shutdown hook of a JVM stopped with SIGTERM may
     * not be able to start one. Its interfaces and tables go when the last process and mount holding it are gone.
     */
    private static void deleteNamespace(String ns) {
        Path file = NETNS_DIR.resolve(ns);
        try {
            String id = "net:[" + Files.getAttribute(file, "unix:ino") + "]";
            try (var procs = Files.list(Path.of("/proc"))) {
                for (Path proc : (Iterable<Path>) procs::iterator) {
                    String pid = proc.getFileName().toString();
                    if (pid.matches("\\d+") && id.equals(netnsOf(proc))) {
                        ProcessHandle.of(Long.parseLong(pid)).ifPresent(p -> {
                            p.destroyForcibly();
                            p.onExit().completeOnTimeout(null, 10, TimeUnit.SECONDS).join();
                        });
                    }
                }
            }
            int rc;
            try (Arena arena = Arena.ofConfined()) {
                rc = (int) UMOUNT2.invokeExact(arena.allocateFrom(file.toString()), MNT_DETACH);
            }
            if (rc != 0) {
                throw new IllegalStateException("umount2(" + file + ") failed");
            }
            Files.deleteIfExists(file);
        } catch (java.nio.file.NoSuchFileException gone) {
            // deleted already
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete network namespace " + ns, e);
        } catch (Throwable e) {
            throw new IllegalStateException("cannot delete network namespace " + ns, e);
        }
    }

    private static String netnsOf(Path proc) {
        try {
            return Files.readSymbolicLink(proc.resolve("ns/net")).toString();
        } catch (IOException | UnsupportedOperationException e) {
            return null; // exited meanwhile, or not ours to read
        }
    }

    static String run(List<String> command) {
        return run(command, null);
    }

    private static String run(List<String> command, String stdin) {
        Result r = exec(command, stdin);
        if (r.exit != 0) {
            throw new IllegalStateException(String.join(" ", command) + " exited " + r.exit + ": " + r.output.strip());
        }
        return r.output;
    }

    private static String runAllowingFailure(List<String> command) {
        return exec(command, null).output;
    }

    private record Result(int exit, String output) {
    }

    private static Result exec(List<String> command, String stdin) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            try (var in = p.getOutputStream()) {
                if (stdin != null) {
                    in.write(stdin.getBytes(StandardCharsets.UTF_8));
                }
            }
            // the output is small; reading it to the end also waits for the exit
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " did not exit within 30 s");
            }
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            throw new UncheckedIOException(String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + String.join(" ", command), e);
        }
    }
}
