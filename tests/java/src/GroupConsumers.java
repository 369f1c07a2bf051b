import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * GroupConsumers runs the members of one consumer group
 * in one JVM, one thread and one KafkaConsumer per member, for kiggy's
 * interop suite (tests/interop), which compiles it with javac against
 * tests/java/lib and drives it through stdin.
 *
 * <pre>java -cp DIR:tests/java/lib/* GroupConsumers BOOTSTRAP TOPIC GROUP ASSIGNORS</pre>
 *
 * ASSIGNORS is partition.assignment.strategy ("default" keeps the Java
 * default, range then cooperative-sticky), or "consumer" for the consumer
 * group protocol of KIP-848 (group.protocol=consumer), "consumer:NAME" with
 * group.remote.assignor NAME. Each member subscribes to TOPIC
 * with auto.offset.reset=earliest and auto-commit off; after processing the
 * records of each poll it commits, with commitSync, the offset after the
 * last record of each partition in that poll.
 *
 * Commands on stdin, one per line: "join NAME" starts a member, "leave NAME"
 * closes it (LeaveGroup), "quit" (or end of input) closes every member and
 * exits 0.
 *
 * Events on stdout, one per line, fields separated by a tab, in the order
 * they happened (one lock orders all members):
 * <pre>
 * joined NAME            the member's consumer subscribed
 * assigned NAME P,P,...  onPartitionsAssigned (the partitions added)
 * revoked NAME P,P,...   onPartitionsRevoked
 * lost NAME P,P,...      onPartitionsLost
 * R NAME P OFFSET VALUE  a record the member processed (VALUE last, may hold tabs)
 * C NAME P OFFSET        commitSync returned: the group's committed offset of P is OFFSET
 * U NAME P OFFSET        commitSync was interrupted (wakeup on leave): the commit of
 *                        OFFSET for P may or may not have been applied
 * F NAME ERROR           a commit failed (the records stay uncommitted)
 * E NAME ERROR           the poll loop failed; the member stops
 * left NAME              close() returned
 * bye                    every member closed; the program exits 0
 * </pre>
 * Exit codes: 0 after "bye", 2 usage.
 */
public final class GroupConsumers {
    private GroupConsumers() {}

    private static final PrintStream OUT =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

    /** emit prints one event line; the lock orders the events of all members. */
    static synchronized void emit(String... fields) {
        OUT.println(String.join("\t", fields));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.out.println("usage: GroupConsumers BOOTSTRAP TOPIC GROUP ASSIGNORS");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1], group = args[2], assignors = args[3];
        Map<String, Member> members = new LinkedHashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 2 && f[0].equals("join") && !members.containsKey(f[1])) {
                Member m = new Member(f[1], bootstrap, topic, group, assignors);
                members.put(f[1], m);
                m.start();
            } else if (f.length == 2 && f[0].equals("leave") && members.containsKey(f[1])) {
                members.remove(f[1]).stopAndJoin();
            } else if (f.length == 1 && f[0].equals("quit")) {
                break;
            } else if (!line.isBlank()) {
                emit("E", "-", "bad command: " + line);
            }
        }
        for (Member m : members.values()) {
            m.stopAndJoin();
        }
        emit("bye");
        System.exit(0);
    }

    /** Member is one group member on its own thread. */
    static final class Member extends Thread implements ConsumerRebalanceListener {
        private final String name;
        private final String topic;
        private final KafkaConsumer<String, String> consumer;
        private volatile boolean stopping;

        Member(String name, String bootstrap, String topic, String group, String assignors) {
            super("member-" + name);
            this.name = name;
            this.topic = topic;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kiggy-interop-" + name);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            if (assignors.equals("consumer") || assignors.startsWith("consumer:")) {
                // The consumer group protocol (KIP-848): the coordinator
                // assigns, with the server assignor after the colon.
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                if (assignors.startsWith("consumer:")) {
                    p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignors.substring("consumer:".length()));
                }
            } else if (!assignors.equals("default")) {
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignors);
            }
            consumer = new KafkaConsumer<>(p);
        }

        void stopAndJoin() throws InterruptedException {
            stopping = true;
            consumer.wakeup();
            join();
        }

        @Override
        public void run() {
            try {
                consumer.subscribe(List.of(topic), this);
                emit("joined", name);
                while (!stopping) {
                    ConsumerRecords<String, String> records;
                    try {
                        records = consumer.poll(Duration.ofMillis(200));
                    } catch (WakeupException e) {
                        break;
                    }
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<String, String> r : records) {
                        emit("R", name, Integer.toString(r.partition()), Long.toString(r.offset()),
                            r.value() == null ? "" : r.value());
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    if (next.isEmpty()) {
                        continue;
                    }
                    try {
                        consumer.commitSync(next, Duration.ofSeconds(30));
                        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet()) {
                            emit("C", name, Integer.toString(e.getKey().partition()), Long.toString(e.getValue().offset()));
                        }
                    } catch (WakeupException e) {
                        // The request may already have reached the
                        // coordinator: its outcome is unknown.
                        for (Map.Entry<TopicPartition, OffsetAndMetadata> en : next.entrySet()) {
                            emit("U", name, Integer.toString(en.getKey().partition()), Long.toString(en.getValue().offset()));
                        }
                        emit("F", name, "woken up during commitSync");
                        break;
                    } catch (Exception e) {
                        emit("F", name, describe(e));
                    }
                }
            } catch (Exception e) {
                emit("E", name, describe(e));
            } finally {
                try {
                    consumer.close(CloseOptions.timeout(Duration.ofSeconds(30)));
                } catch (Exception e) {
                    emit("E", name, "close: " + describe(e));
                }
                emit("left", name);
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            emit("assigned", name, list(parts));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            emit("revoked", name, list(parts));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> parts) {
            emit("lost", name, list(parts));
        }
    }

    private static String list(Collection<TopicPartition> parts) {
        TreeSet<Integer> ps = new TreeSet<>();
        for (TopicPartition tp : parts) {
            ps.add(tp.partition());
        }
        List<String> out = new ArrayList<>();
        for (int p : ps) {
            out.add(Integer.toString(p));
        }
        return String.join(",", out);
    }

    /** describe names an exception and its causes with their messages, on one line. */
    private static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- caused by ");
            }
            sb.append(c.getClass().getName()).append(": ").append(c.getMessage());
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString().replace('\n', ' ').replace('\t', ' ');
    }
}
