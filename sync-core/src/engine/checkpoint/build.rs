//! Which build is running, for a checkpoint's scope: another build may convert
//! differently, so its checkpoints must not be trusted.
//!
//! The linker's build id (an ELF note computed from the linked output, written by the
//! toolchains on Linux and asked for by `controllers/build.rs`) names the build from a
//! few hundred bytes at the start of the executable. Without one (another format, a link
//! that left it out) the whole executable is hashed, which reads all of its ~20 MB.

use std::fs::File;
use std::hash::{DefaultHasher, Hasher};
use std::io::{Read, Seek};
use std::path::Path;

use object::elf::{ELF_NOTE_GNU, FileHeader64, NT_GNU_BUILD_ID};
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endianness, ReadCache};

/// A hash naming the running executable's build.
pub(crate) fn identity() -> Result<u64, String> {
    let path = std::env::current_exe().map_err(|e| format!("the executable's path: {e}"))?;
    identity_of(&path)
}

/// A hash naming the build of the executable at `path`: its build id when it has one,
/// else all of its bytes.
fn identity_of(path: &Path) -> Result<u64, String> {
    let file = File::open(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut hasher = DefaultHasher::new();
    match gnu_build_id(&file) {
        Some(id) => {
            hasher.write(b"build id");
            hasher.write(&id);
        }
        None => hash_contents(&file, path, &mut hasher)?,
    }
    Ok(hasher.finish())
}

/// The GNU build id note of a 64-bit ELF file, reading only its header, program
/// headers and note segments.
fn gnu_build_id(file: &File) -> Option<Vec<u8>> {
    let data = ReadCache::new(file);
    let header = FileHeader64::<Endianness>::parse(&data).ok()?;
    let endian = header.endian().ok()?;
    for segment in header.program_headers(endian, &data).ok()? {
        let Ok(Some(mut notes)) = segment.notes(endian, &data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            let is_build_id = note.name() == ELF_NOTE_GNU && note.n_type(endian) == NT_GNU_BUILD_ID;
            if is_build_id && !note.desc().is_empty() {
                return Some(note.desc().to_vec());
            }
        }
    }
    None
}

/// Hashes every byte of `file`, from its start (looking for the build id moved its
/// position).
fn hash_contents(mut file: &File, path: &Path, hasher: &mut DefaultHasher) -> Result<(), String> {
    file.rewind()
        .map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut buffer = vec![0; 1 << 16];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => hasher.write(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit little-endian ELF file: its header, one note segment holding one
    /// GNU note of type `kind`, then `tail`.
    fn elf_with_note(kind: u32, desc: &[u8], tail: &[u8]) -> Vec<u8> {
        const NOTE_AT: u64 = 64 + 56; // after the file header and the program header
        let note_size = (12 + 4 + desc.len()) as u64;
        let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        // type (executable), machine (x86-64), version; entry, phoff, shoff; flags
        elf.extend([2u16, 62].map(u16::to_le_bytes).concat());
        elf.extend(1u32.to_le_bytes());
        elf.extend([0u64, 64, 0].map(u64::to_le_bytes).concat());
        elf.extend(0u32.to_le_bytes());
        // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
        elf.extend([64u16, 56, 1, 64, 0, 0].map(u16::to_le_bytes).concat());
        // The program header: a readable note segment.
        elf.extend([4u32, 4].map(u32::to_le_bytes).concat());
        let segment = [NOTE_AT, NOTE_AT, NOTE_AT, note_size, note_size, 4];
        elf.extend(segment.map(u64::to_le_bytes).concat());
        // The note: name size, description size, type, name, description.
        elf.extend([4, desc.len() as u32, kind].map(u32::to_le_bytes).concat());
        elf.extend(b"GNU\0".iter().chain(desc).chain(tail));
        elf
    }

    /// The identity of `bytes` written to a file of their own.
    fn identity_of_bytes(name: &str, bytes: &[u8]) -> Result<(u64, Option<Vec<u8>>), String> {
        let path = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::write(&path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
        let file = File::open(&path).map_err(|e| e.to_string())?;
        let found = (identity_of(&path), gnu_build_id(&file));
        let _ = std::fs::remove_file(&path);
        Ok((found.0?, found.1))
    }

    #[test]
    fn an_elf_build_id_names_the_build_whatever_else_the_file_holds() -> Result<(), String> {
        let id = [7, 1, 2, 3, 4, 5, 6, 8];
        let (one, found) = identity_of_bytes("build-a", &elf_with_note(NT_GNU_BUILD_ID, &id, b"code"))?;
        assert_eq!(found, Some(id.to_vec()));
        let (same, _) = identity_of_bytes("build-b", &elf_with_note(NT_GNU_BUILD_ID, &id, b"edoc"))?;
        assert_eq!(one, same, "the build id, not the other bytes, names the build");
        let other_id = [7, 1, 2, 3, 4, 5, 6, 9];
        let (other, _) = identity_of_bytes("build-c", &elf_with_note(NT_GNU_BUILD_ID, &other_id, b"code"))?;
        assert_ne!(one, other);
        Ok(())
    }

    #[test]
    fn without_a_build_id_every_byte_names_the_build() -> Result<(), String> {
        let abi_tag = 1;
        let (one, found) = identity_of_bytes("no-id-a", &elf_with_note(abi_tag, &[0; 16], b"code"))?;
        assert_eq!(found, None);
        let (other, _) = identity_of_bytes("no-id-b", &elf_with_note(abi_tag, &[0; 16], b"edoc"))?;
        assert_ne!(one, other);
        let mut other_entry = elf_with_note(abi_tag, &[0; 16], b"code");
        other_entry[24] ^= 1;
        let (other, _) = identity_of_bytes("no-id-entry", &other_entry)?;
        assert_ne!(one, other, "a byte before the notes counts too");
        let script = b"#!/bin/sh\necho not an object file\n";
        let (script_id, found) = identity_of_bytes("no-id-c", script)?;
        assert_eq!(found, None);
        assert_ne!(script_id, one);
        Ok(())
    }
}
