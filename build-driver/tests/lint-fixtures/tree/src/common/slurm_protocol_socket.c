/* lint fixture (not Slurm code): address families on the wire */
extern void pack_addr(slurm_addr_t *addr, buf_t *buffer)
{
	pack16(addr->ss_family, buffer); /* finding */
	pack16(map_family(addr->ss_family), buffer); /* mapped: no finding */
}

extern int unpack_addr(slurm_addr_t *addr, buf_t *buffer)
{
	uint16_t tmp = 0, port = 0;

	safe_unpack16(&tmp, buffer);
	safe_unpack16(&port, buffer);
	addr->ss_family = tmp; /* finding */
	addr->ss_family = unmap_family(tmp); /* mapped: no finding */
	return 0;
unpack_error:
	return -1;
}
