package org.tent4j.samples.cli;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/**
 * {@code tent4j metadata-server ...}: runs the HTTP metadata server of module metadata-http, passing every argument
 * through. The class is looked up by name because samples compile against te-api only; the plugins are run-time
 * dependencies.
 */
@Command(name = "metadata-server", mixinStandardHelpOptions = false,
        description = {"Runs the HTTP metadata server (org.tent4j.metadata.http.HttpMetadataServer);",
                "every argument (e.g. --port 8080) goes to it unchanged."})
public final class MetadataServerCommand implements Callable<Integer> {
    static final String SERVER_CLASS = "org.tent4j.metadata.http.HttpMetadataServer";

    /** The class whose main runs; tests point it elsewhere. */
    static volatile String serverClass = SERVER_CLASS;

    @Spec
    CommandSpec spec;

    @Unmatched
    List<String> arguments = new ArrayList<>();

    private static volatile boolean serverRunning;

    /** Whether a server's main returned normally in this JVM (its threads may still be serving). */
    static boolean serverRunning() {
        return serverRunning;
    }

    @Override
    public Integer call() throws Exception {
        Method main;
        try {
            main = Class.forName(serverClass).getMethod("main", String[].class);
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            spec.commandLine().getErr().println("tent4j metadata-server: " + serverClass
                    + " (with public static void main(String[])) is not on the class path: add org.tent4j:metadata-http");
            return 3;
        }
        if (!Modifier.isStatic(main.getModifiers())) {
            spec.commandLine().getErr().println("tent4j metadata-server: " + serverClass + ".main is not static");
            return 3;
        }
        try {
            main.invoke(null, (Object) arguments.toArray(String[]::new));
            serverRunning = true;
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception x) {
                throw x;
            }
            if (e.getCause() instanceof Error x) {
                throw x;
            }
            throw e;
        }
        return 0;
    }
}
