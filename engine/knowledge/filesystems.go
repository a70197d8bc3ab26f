package knowledge

// FileSystem is one file-system type whose answers toolgate takes as
// proofs: its name as /proc/self/mountinfo spells it and its statfs(2)
// magic number.
type FileSystem struct {
	Name  string
	Magic int64
}

// LocalFileSystems are the file-system types a path may lead onto for a
// proof about it to hold: file systems on this machine's own disks, and
// the kernel's in-memory ones. An allowlist: everything else (nfs, cifs,
// smb3, 9p, virtiofs, ceph, every fuse and fuseblk type such as sshfs,
// autofs, whose lookups mount one of those) may stall a lookup for as long
// as a daemon or another machine pleases, or answer with another machine's
// data that changes under the proof, so a path that leads onto one is not
// proven, however it looks.
var LocalFileSystems = []FileSystem{
	// Disk file systems.
	{"ext2", 0xef53}, {"ext3", 0xef53}, {"ext4", 0xef53},
	{"xfs", 0x58465342},
	{"btrfs", 0x9123683e},
	{"zfs", 0x2fc12fc1},
	{"f2fs", 0xf2f52010},
	{"bcachefs", 0xca451a4e},
	{"jfs", 0x3153464a},
	{"reiserfs", 0x52654973},
	{"nilfs2", 0x3434},
	{"vfat", 0x4d44}, {"msdos", 0x4d44},
	{"exfat", 0x2011bab0},
	{"ntfs3", 0x7366746e},
	{"hfsplus", 0x482b},
	{"iso9660", 0x9660},
	{"udf", 0x15013346},
	{"squashfs", 0x73717368},
	{"erofs", 0xe0f5e1e2},
	{"ecryptfs", 0xf15f},
	// The kernel's own: answered from memory by this kernel.
	{"tmpfs", 0x01021994},
	{"ramfs", 0x858458f6},
	{"overlay", 0x794c7630},
	{"devtmpfs", 0x01021994},
	{"devpts", 0x1cd1},
	{"proc", 0x9fa0},
	{"sysfs", 0x62656572},
	{"cgroup", 0x27e0eb},
	{"cgroup2", 0x63677270},
	{"mqueue", 0x19800202},
	{"hugetlbfs", 0x958458f6},
	{"debugfs", 0x64626720},
	{"tracefs", 0x74726163},
	{"securityfs", 0x73636673},
	{"pstore", 0x6165676c},
	{"bpf", 0xcafe4a11},
	{"configfs", 0x62656570},
	{"efivarfs", 0xde5e81e4},
	{"binfmt_misc", 0x42494e4d},
	{"nsfs", 0x6e736673},
}

// LocalFileSystem reports whether the mountinfo type name is in
// LocalFileSystems.
func LocalFileSystem(name string) bool {
	for _, f := range LocalFileSystems {
		if f.Name == name {
			return true
		}
	}
	return false
}

// LocalMagic returns the name of the local file system whose statfs magic
// is m, or "".
func LocalMagic(m int64) string {
	for _, f := range LocalFileSystems {
		if f.Magic == m {
			return f.Name
		}
	}
	return ""
}
