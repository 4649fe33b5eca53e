"""OS containment for shell commands: tiers (bubblewrap, Landlock, network
namespace, none) behind one `CommandSandbox` seam, probed once per process."""
