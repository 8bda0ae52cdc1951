/* deskd-init's executable, built into deskd: the launcher executes it from a sealed memfd,
 * so no path on the host or in the sandbox has to hold it, and no desk can replace it. */
  .section .rodata
  .balign 64
  .global deskd_init_image_start
  .global deskd_init_image_end
deskd_init_image_start:
  .incbin DESKD_INIT_IMAGE
deskd_init_image_end:
  .section .note.GNU-stack,"",@progbits
