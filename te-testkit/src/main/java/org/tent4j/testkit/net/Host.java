package org.tent4j.testkit.net;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.tent4j.testkit.ChildJvm;

/**
 * One host of a {@link TestNetwork}: a network namespace with its loopback and one interface per link it is on (named
 * after the link). Processes started through it ({@link #jvm}, {@link #exec}, {@link #command}) see only that
 * namespace's interfaces.
 */
public final class Host {
    private final TestNetwork network;
    private final String name;
    private final String namespace;
    private final List<Link> links = new CopyOnWriteArrayList<>();

    Host(TestNetwork network, String name, String namespace) {
        this.network = network;
        this.name = name;
        this.namespace = namespace;
    }

    void joined(Link link) {
        links.add(link);
    }

    /**
     * The name the test gave it.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * Its namespace's name, as {@code ip netns} shows it.
     *
     * @return the namespace
     */
    public String namespace() {
        return namespace;
    }

    /**
     * The links it is on, in the order they were made.
     *
     * @return the links
     */
    public List<Link> links() {
        return List.copyOf(links);
    }

    /**
     * Its address on its first link.
     *
     * @return an IPv4 address
     */
    public String address() {
        if (links.isEmpty()) {
            throw new IllegalStateException("host " + name + " is on no link");
        }
        return links.get(0).address(this);
    }

    /**
     * Its address on {@code link}.
     *
     * @param link a link this host is on
     * @return an IPv4 address
     */
    public String address(Link link) {
        return link.address(this);
    }

    /**
     * Its addresses, one per link, in the order the links were made.
     *
     * @return the addresses
     */
    public List<String> addresses() {
        List<String> all = new ArrayList<>();
        for (Link l : links) {
            all.add(l.address(this));
        }
        return all;
    }

    /**
     * {@code command} prefixed so that it runs inside this host ({@code ip netns exec <namespace> ...}).
     *
     * @param command the command's words
     * @return the prefixed command
     */
    public List<String> command(List<String> command) {
        return network.prefix(namespace, command);
    }

    /**
     * Runs {@code command} inside this host, waits for it and returns its output; fails on a non-zero exit.
     *
     * @param command the command's words
     * @return what it printed
     */
    public String exec(String... command) {
        return network.exec(this, List.of(command));
    }

    /**
     * Runs {@code command} inside this host, waits for it and returns its output (stdout and stderr), whatever its exit.
     *
     * @param command the command's words
     * @return what it printed
     */
    public String execAllowingFailure(String... command) {
        return network.execAllowingFailure(this, List.of(command));
    }

    /**
     * A child JVM to run inside this host, its stderr in {@code target/<main class>-<host>.log} unless the caller sets
     * another file.
     *
     * @param mainClass the class whose {@code main} runs
     * @return a builder; start it
     */
    public ChildJvm.Builder jvm(Class<?> mainClass) {
        return ChildJvm.builder(mainClass).commandPrefix(command(List.of()))
                .stderr(java.nio.file.Path.of("target", mainClass.getSimpleName() + "-" + name + ".log"));
    }

    @Override
    public String toString() {
        return name + " (" + namespace + ")";
    }
}
